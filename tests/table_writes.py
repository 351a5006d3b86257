"""Watching the table port's writes: the tests that prove a read writes nothing spy on these methods."""

from __future__ import annotations

from typing import Any

import pytest

WRITE_METHODS = ("put", "delete", "transact", "batch_put", "batch_delete")


def spy_writes(table: Any, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every later call of `table`'s write methods, by name (`monkeypatch.undo()` stops watching)."""
    calls: list[str] = []
    for name in WRITE_METHODS:
        original = getattr(table, name)

        def spy(*args: Any, _name: str = name, _original: Any = original, **kwargs: Any) -> Any:
            calls.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(table, name, spy)
    return calls
