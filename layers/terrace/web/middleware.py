"""The app's ASGI middleware (pure ASGI: exceptions from `receive` reach the app's error handlers as they are).

`BodyLimit` counts request body bytes as they stream in (Content-Length or chunked) and answers 413 as soon
as the limit is passed, without reading the rest. `ExtraHeaders` adds the TFC API headers under a prefix.
`TrailingSlash` routes `/path/` as `/path` (clients do not follow a redirect on POST)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from terrace.domain.errors import TooLarge
from terrace.services.access.grants import request_scope

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
RespondTooLarge = Callable[[str], Any]  # detail -> a Starlette response (an ASGI app)


class BodyTooLarge(TooLarge):
    """Raised from `receive` once the streamed body passes the limit; the domain error handler makes it a 413."""


class BodyLimit:
    def __init__(
        self, app: ASGIApp, max_bytes: int, respond: RespondTooLarge, exempt_prefixes: tuple[str, ...] = ()
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.respond = respond
        self.exempt_prefixes = exempt_prefixes  # paths that enforce a limit of their own (signed blob URLs)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or (
            self.exempt_prefixes and str(scope.get("path", "")).startswith(self.exempt_prefixes)
        ):
            await self.app(scope, receive, send)
            return
        detail = f"the request body is larger than the limit of {self.max_bytes} bytes"
        declared = dict(scope.get("headers") or []).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await self.respond(detail)(scope, receive, send)
            return
        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise BodyTooLarge(detail)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except BodyTooLarge:
            if started:
                raise
            await self.respond(detail)(scope, receive, send)


def _encoded(headers: dict[str, str]) -> list[tuple[bytes, bytes]]:
    return [(k.lower().encode(), v.encode()) for k, v in headers.items()]


class ExtraHeaders:
    """Headers added to every response under `prefix`: the fixed `headers`, plus what `per_path(path)` gives."""

    def __init__(
        self,
        app: ASGIApp,
        prefix: str,
        headers: dict[str, str],
        per_path: Callable[[str], dict[str, str]] | None = None,
    ) -> None:
        self.app = app
        self.prefix = prefix
        self.headers = _encoded(headers)  # encoded once; only `per_path` is asked per request
        self.per_path = per_path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        if scope["type"] != "http" or not path.startswith(self.prefix):
            await self.app(scope, receive, send)
            return
        added = self.headers + (_encoded(self.per_path(path)) if self.per_path else [])

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {name for name, _ in added}
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in names]
                message["headers"] = kept + added
            await send(message)

        await self.app(scope, receive, with_headers)


class TrailingSlash:
    """`/api/v2/workspaces/ws-x/vars/` is served as `/api/v2/workspaces/ws-x/vars`, never redirected: TFC answers
    both alike, and go-tfe, terraform and curl do not repeat a POST body after a 307."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        if scope["type"] == "http" and len(path) > 1 and path.endswith("/"):
            stripped = path.rstrip("/") or "/"
            raw = scope.get("raw_path")
            scope = dict(scope, path=stripped)
            if isinstance(raw, bytes | bytearray):
                scope["raw_path"] = bytes(raw).rstrip(b"/") or b"/"
        await self.app(scope, receive, send)


class RequestGrants:
    """Remember each caller's team grants for one request only (`services/access/grants.py`)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        with request_scope():
            await self.app(scope, receive, send)
