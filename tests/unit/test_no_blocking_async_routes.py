"""No `async def` route handler, dependency or exception handler may block the event loop.

FastAPI runs a plain `def` endpoint (and dependency) in its thread pool, but awaits an `async def` one on the
event loop: a boto3, SQLite or file call there stalls every other request of the process. So every endpoint
that calls the services is plain `def`, and the few that are `async` are on the allow-lists below, each with
the reason it never blocks. Adding an `async def` route fails this test until it is made plain `def` or
listed here (with its reason).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from app_routes import dependencies as _dependencies
from app_routes import qualified_name as _name
from app_routes import routes as _routes
from fastapi import FastAPI
from fastapi.routing import APIRoute
from terrace.bootstrap import build_embedded, build_memory
from terrace.config import Settings
from terrace.web.app import create_app

# endpoint -> why it never blocks the event loop
ASYNC_ENDPOINTS = {
    # the embedded server's blob URLs stream bodies: every file operation is sent to the thread pool
    "terrace.web.blob_urls.download": "path.is_file in the thread pool; FileResponse streams from disk",
    "terrace.web.blob_urls.upload": "each write, commit and abort in the thread pool",
    "fastapi.applications.FastAPI.setup.<locals>.openapi": "FastAPI's own: the schema, built once in memory",
}
# dependency -> why it never blocks
ASYNC_DEPENDENCIES = {
    "terrace.web.jsonapi.json_body": "awaits the request body, then parses JSON in memory",
    "terrace.web.jsonapi.raw_body": "awaits the request body",
    "terrace.web.deps.form_fields": "awaits the request body, then parses the form in memory",
}
# exception handler -> why it never blocks
ASYNC_EXCEPTION_HANDLERS = {
    # (replaces errors.install's _validation, _http and _unexpected, which it calls outside /app: JSON:API errors)
    "terrace.web.ui.error_pages.install.<locals>._html_under_app.<locals>.handler": "reads the session in the"
    " thread pool, then renders",
    "terrace.web.ui.error_pages.install.<locals>._sign_in": "a redirect",
    "terrace.web.ui.error_pages.install.<locals>._csrf": "renders a template",
    # (replaces errors.install's own, which it calls outside /app: that one builds a JSON:API error)
    "terrace.web.ui.error_pages.install.<locals>._domain": "reads the session in the thread pool, then renders",
    "terrace.web.errors.install.<locals>._gone": "logs a line and builds a JSON:API error (the client left)",
    "fastapi.exception_handlers.websocket_request_validation_exception_handler": "FastAPI's own; no websockets",
}


def _is_async(func: Any) -> bool:
    call = inspect.unwrap(func)
    if inspect.isroutine(call) or inspect.isclass(call):
        return inspect.iscoroutinefunction(call)
    return inspect.iscoroutinefunction(type(call).__call__)  # a callable instance: its __call__ decides


def _async_parts(app: FastAPI) -> tuple[set[str], set[str], set[str]]:
    endpoints, dependencies = set(), set()
    for route in _routes(app.router.routes):
        if _is_async(route.endpoint):
            endpoints.add(_name(route.endpoint))
        if isinstance(route, APIRoute):
            dependencies |= {_name(call) for call in _dependencies(route.dependant) if _is_async(call)}
    handlers = {_name(handler) for handler in app.exception_handlers.values() if _is_async(handler)}
    return endpoints, dependencies, handlers


@pytest.fixture
def embedded_app(tmp_path: Path) -> Iterator[FastAPI]:
    settings = Settings(table_name="embedded", blob_bucket="embedded", data_dir=str(tmp_path), url_signing_secret="s")
    container = build_embedded(settings)
    try:
        yield create_app(container)
    finally:
        container.close()


def test_the_app_has_routes_to_check(embedded_app: FastAPI) -> None:
    routes = list(_routes(embedded_app.router.routes))
    assert len(routes) > 100
    assert {_name(route.endpoint) for route in routes} >= set(ASYNC_ENDPOINTS), "the blob URLs are mounted"


def test_only_listed_async_handlers_exist(embedded_app: FastAPI) -> None:
    endpoints, dependencies, handlers = _async_parts(embedded_app)
    assert endpoints <= set(ASYNC_ENDPOINTS), (
        f"async def endpoints must be plain def: {endpoints - set(ASYNC_ENDPOINTS)}"
    )
    assert dependencies <= set(ASYNC_DEPENDENCIES), f"async dependencies: {dependencies - set(ASYNC_DEPENDENCIES)}"
    assert handlers <= set(ASYNC_EXCEPTION_HANDLERS), f"async handlers: {handlers - set(ASYNC_EXCEPTION_HANDLERS)}"


def test_the_allow_lists_name_nothing_that_is_gone(embedded_app: FastAPI) -> None:
    endpoints, dependencies, handlers = _async_parts(embedded_app)
    assert (endpoints, dependencies, handlers) == (
        set(ASYNC_ENDPOINTS),
        set(ASYNC_DEPENDENCIES),
        set(ASYNC_EXCEPTION_HANDLERS),
    )


def test_an_async_endpoint_is_caught() -> None:
    app = create_app(build_memory())

    @app.get("/api/v2/blocking")
    async def blocking() -> dict[str, str]:  # the kind of endpoint the guide forbids
        return {}

    endpoints, _, _ = _async_parts(app)
    assert endpoints - set(ASYNC_ENDPOINTS) == {f"{__name__}.test_an_async_endpoint_is_caught.<locals>.blocking"}
