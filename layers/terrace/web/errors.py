"""Domain errors -> HTTP for the JSON:API protocol, in one table (SCIM's: `web/scim_errors.py`)."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from terrace.adapters.storage_errors import storage_failure
from terrace.domain import errors
from terrace.web import scim_errors
from terrace.web.jsonapi import JSONAPIResponse

log = logging.getLogger("terrace.web")

STATUS: list[tuple[type[errors.TerraceError], int]] = [
    (errors.Unauthenticated, 401),
    (errors.Forbidden, 403),
    (errors.NotFound, 404),
    (errors.Locked, 409),
    (errors.Conflict, 409),
    (errors.PreconditionFailed, 412),
    (errors.TooLarge, 413),
    (errors.Invalid, 422),
    (errors.TooManyRequests, 429),
    (errors.BadRequest, 400),
]


def status_of(exc: errors.TerraceError) -> int:
    for kind, status in STATUS:
        if isinstance(exc, kind):
            return status
    return 400


def error_document(
    status: int, title: str, detail: str, pointer: str | None = None, also: tuple[str, ...] = ()
) -> dict[str, object]:
    found: list[dict[str, object]] = []
    for one in (detail, *also):
        error: dict[str, object] = {"status": str(status), "title": title, "detail": one}
        if pointer:
            error["source"] = {"pointer": pointer}
        found.append(error)
    return {"errors": found}


def error_response(
    status: int,
    title: str,
    detail: str,
    pointer: str | None = None,
    *,
    headers: dict[str, str] | None = None,
    also: tuple[str, ...] = (),
) -> JSONAPIResponse:
    if status == 401:
        headers = {**(headers or {}), "WWW-Authenticate": 'Bearer realm="terrace"'}
    document = error_document(status, title, detail, pointer, also)
    return JSONAPIResponse(document, status_code=status, headers=headers)


def install(app: FastAPI) -> None:
    app.add_middleware(StorageFailures)  # first added: the innermost middleware, every other one sees its answer

    @app.exception_handler(errors.TerraceError)
    async def _domain(request: Request, exc: errors.TerraceError) -> Response:
        if request.url.path.startswith(scim_errors.PREFIX):  # SCIM's own error documents (RFC 7644 3.12)
            return scim_errors.scim_error(exc)
        pointer, also = getattr(exc, "pointer", None), getattr(exc, "also", ())
        return error_response(status_of(exc), exc.title, exc.detail, pointer, also=also)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONAPIResponse:
        first = exc.errors()[0] if exc.errors() else {}
        loc = "/".join(str(p) for p in first.get("loc", ()))
        return error_response(422, "invalid request", f"{loc}: {first.get('msg', 'invalid')}")

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONAPIResponse:
        title = {404: "not found", 405: "method not allowed"}.get(exc.status_code, "error")
        return error_response(exc.status_code, title, str(exc.detail))

    @app.exception_handler(ClientDisconnect)
    async def _gone(request: Request, exc: ClientDisconnect) -> JSONAPIResponse:
        # the client left while its body was read: nothing was done, and no one reads this answer (not a bug: no 500)
        log.info("client disconnected during %s %s", request.method, request.url.path)
        return error_response(400, "client disconnected", "the client disconnected before its request body was read")

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONAPIResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return error_response(500, "internal error", "an unexpected error occurred; it has been logged")


class StorageFailures:
    """Answers a request that met a storage failure (`adapters/storage_errors.py`: the table, the blob store or the
    disk under them) with a JSON:API 503 (`Retry-After`) or 507 the client retries. A middleware, not an exception
    handler of `Exception`: Starlette runs that one in its outermost middleware and re-raises after answering, and
    uvicorn then closes the connection, so a client's next request on it (a retry) met "server disconnected"."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracking)
        except Exception as exc:
            failure = storage_failure(exc)
            if failure is None or started:
                raise
            log.warning("storage failure on %s %s: %r", scope.get("method"), scope.get("path"), exc)
            headers = {"Retry-After": "1"} if failure.status == 503 else None
            await error_response(failure.status, failure.title, failure.detail, headers=headers)(scope, receive, send)
