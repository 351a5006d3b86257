"""Browser security headers (pure ASGI middleware, outermost: every response gets them, a 413 or 429 too).

Every response: `X-Content-Type-Options: nosniff`, `Referrer-Policy: same-origin`, and over HTTPS
`Strict-Transport-Security` (not for `localhost` or an IP address: HSTS is per host name, whatever the port, and
would push every other local development server of that name onto HTTPS). Web UI pages (`/app`) also get a
Content-Security-Policy that allows scripts, styles and requests of this origin only: no inline script, style
or handler (htmx is told to add no inline style and evaluate nothing: `base.html`), no framing, forms posting
here or to the `terraform login` listener on localhost (a browser checks the approval's redirect against it).
"""

from __future__ import annotations

import ipaddress

from terrace.web.middleware import ASGIApp, Message, Receive, Scope, Send

CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",
        "form-action 'self' http://localhost:* http://127.0.0.1:*",
        "frame-ancestors 'none'",
        "base-uri 'none'",
    )
)
HSTS = "max-age=31536000"
UI_PREFIX = "/app"

_EVERYWHERE = [(b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"same-origin")]
_UI = [(b"content-security-policy", CONTENT_SECURITY_POLICY.encode()), (b"x-frame-options", b"DENY")]


def _local_host(scope: Scope) -> bool:
    headers: dict[bytes, bytes] = dict(scope.get("headers") or [])
    host = headers.get(b"host", b"").decode("latin-1").lower()
    name = host[1:].partition("]")[0] if host.startswith("[") else host.rpartition(":")[0] or host
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class SecurityHeaders:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        added = list(_EVERYWHERE)
        if str(scope.get("path", "")).startswith(UI_PREFIX):
            added += _UI
        if scope.get("scheme") == "https" and not _local_host(scope):
            added.append((b"strict-transport-security", HSTS.encode()))
        names = {name for name, _ in added}

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in names]
                message["headers"] = kept + added
            await send(message)

        await self.app(scope, receive, with_headers)
