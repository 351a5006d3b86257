"""Walking the app's routes for the tests that read them (no blocking async code, data only through services,
one use case per route)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from typing import Any

from fastapi.dependencies.models import Dependant
from starlette.routing import Mount, Route


def qualified_name(func: Any) -> str:
    func = inspect.unwrap(func)
    return f"{func.__module__}.{func.__qualname__}"


def routes(items: list[Any]) -> Iterator[Route]:
    """Every route, through mounts and included routers (FastAPI keeps an included router whole, as
    `original_router`)."""
    for route in items:
        if isinstance(route, Mount):
            yield from routes(route.routes)
        elif (included := getattr(route, "original_router", None)) is not None:
            yield from routes(included.routes)
        elif isinstance(route, Route):
            yield route


def dependencies(dependant: Dependant) -> Iterator[Callable[..., Any]]:
    """The callables a route depends on, sub-dependencies included."""
    for sub in dependant.dependencies:
        if sub.call is not None:
            yield sub.call
        yield from dependencies(sub)
