"""Endpoints call blocking services (DynamoDB, S3, KMS): each is a plain `def`, run in FastAPI's thread pool,
so one slow call never stalls the event loop. Bodies are read by async dependencies (`jsonapi.JSONBody`)."""

from __future__ import annotations

import inspect
from typing import Any

from fastapi.routing import APIRoute
from terrace.bootstrap import build_memory
from terrace.web.app import create_app


def api_routes(routes: list[Any]) -> list[APIRoute]:
    found: list[APIRoute] = []
    for route in routes:
        if isinstance(route, APIRoute):
            found.append(route)
        elif hasattr(route, "original_router"):  # an included router
            found.extend(api_routes(route.original_router.routes))
    return found


def test_no_endpoint_is_async() -> None:
    app = create_app(build_memory())
    routes = api_routes(list(app.routes))
    assert len(routes) > 60
    async_endpoints = [
        f"{sorted(route.methods)} {route.path}" for route in routes if inspect.iscoroutinefunction(route.endpoint)
    ]
    assert async_endpoints == []
