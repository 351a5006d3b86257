"""FastAPI's refusal of pydantic.v1 models, without importing pydantic.v1 to make it.

FastAPI analyses every route's parameters when the route is added and asks, for each, whether its annotation is a
pydantic.v1 model (`fastapi._compat.shared.is_pydantic_v1_model_class`, to refuse it). To ask, it imports
`pydantic.v1`: ~40 modules, ~20 ms of the API Lambda's first request (`python -m bench --only cold_start`), though
Terrace defines no such model. A class is a pydantic.v1 model only if `pydantic.v1` was imported to define it, so
while it is not loaded the answer is no, and once it is loaded FastAPI's own check answers: the same answers,
without the import. `install` is called by `create_app`; if FastAPI no longer has the check, it does nothing
(`tests/unit/test_api_cold_imports.py` then sees pydantic.v1 loaded by the first request).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

V1 = "pydantic.v1"
MARK = "_answers_unless_v1_unloaded"


def _unless_unloaded(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    def checked(value: Any) -> bool:
        return V1 in sys.modules and check(value)

    checked.__name__ = check.__name__
    setattr(checked, MARK, check)
    return checked


def install() -> None:
    """FastAPI's pydantic.v1 model check answers no while pydantic.v1 is not loaded (idempotent)."""
    try:
        from fastapi._compat import shared
    except ImportError:  # pragma: no cover - a FastAPI without the module has no such check
        return
    check = getattr(shared, "is_pydantic_v1_model_class", None)
    if callable(check) and not hasattr(check, MARK):
        shared.is_pydantic_v1_model_class = _unless_unloaded(check)  # type: ignore[assignment]
