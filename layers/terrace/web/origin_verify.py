"""Requests must come through CloudFront (pure ASGI middleware, on AWS only): CloudFront adds the deployment's
origin-verify secret as the `X-Terrace-Origin-Verify` header (infra/origin_verify.py) and a request without it
(someone calling the `execute-api` endpoint directly) is refused with a 403 before anything else runs. Off when
`TERRACE_ORIGIN_VERIFY` is empty (the embedded server, local mode)."""

from __future__ import annotations

import hmac
from collections.abc import Callable

from starlette.responses import Response

from terrace.web.middleware import ASGIApp, Receive, Scope, Send

HEADER = b"x-terrace-origin-verify"


class OriginVerify:
    def __init__(self, app: ASGIApp, *, secret: str, respond: Callable[[], Response]) -> None:
        self.app = app
        self._secret = secret.encode()
        self._respond = respond

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(HEADER, b"")
            if not hmac.compare_digest(given, self._secret):
                await self._respond()(scope, receive, send)
                return
        await self.app(scope, receive, send)
