"""Watching the table port's writes: the tests that prove a read writes nothing spy on these methods."""

from __future__ import annotations

from typing import Any

import pytest

WRITE_METHODS = ("put", "delete", "transact", "batch_put", "batch_delete")


def audit_event(item: Any) -> bool:
    """An audit trail's event (`services/audit/store.py`): every recorded request writes one, a refused or read-only
    one too; the tests that prove a request changes nothing watch the rest of the table."""
    return isinstance(item, dict) and str(item.get("pk", "")).startswith("audit#")


def spy_writes(table: Any, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every later call of `table`'s write methods, by name, but the audit trail's events (`monkeypatch.undo()`
    stops watching)."""
    calls: list[str] = []
    for name in WRITE_METHODS:
        original = getattr(table, name)

        def spy(*args: Any, _name: str = name, _original: Any = original, **kwargs: Any) -> Any:
            if _name == "put" and args and audit_event(args[0]):
                return _original(*args, **kwargs)
            calls.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(table, name, spy)
    return calls
