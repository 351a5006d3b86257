"""Rate limiting per API token, as TFC does (30 requests per second per token): a token bucket per caller.

The buckets live in the process: exact for the one-process local server; on AWS each Lambda instance keeps its
own, so a caller spread over N warm instances may reach N times the limit there, and the API Gateway stage's
throttle (`infra/api.py`) is the global backstop. A request over the limit is a 429 with a JSON:API error,
`X-RateLimit-Reset` (seconds until the next request may pass, a decimal number as go-tfe parses it) and
`Retry-After`; every `/api/v2` response carries `X-RateLimit-Limit` (`web/routers/discovery.py`)."""

from __future__ import annotations

import hashlib
import math
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from terrace.web.middleware import ASGIApp, Receive, Scope, Send


def monotonic_now() -> float:
    return time.monotonic()


MAX_CALLERS = 10_000  # buckets kept; the least recently seen go first (a full bucket loses nothing)


class TokenBuckets:
    """`rate` requests per second per key, bursting up to `burst` (default: `rate`). Not thread-safe: used from the
    event loop (or under a lock)."""

    def __init__(self, rate: float, clock: Callable[[], float] | None = None, *, burst: float | None = None) -> None:
        self.rate = rate
        self.capacity = burst if burst is not None else rate
        self._clock = clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # key -> (tokens, at)

    def take(self, key: str) -> float:
        """Spend one request of `key`: 0.0 when it may pass, else the seconds until it could."""
        now = (self._clock or monotonic_now)()
        tokens, at = self._buckets.pop(key, (self.capacity, now))
        tokens = min(self.capacity, tokens + (now - at) * self.rate)
        wait = 0.0
        if tokens >= 1:
            tokens -= 1
        else:
            wait = (1 - tokens) / self.rate
        self._buckets[key] = (tokens, now)
        while len(self._buckets) > MAX_CALLERS:
            self._buckets.popitem(last=False)
        return wait


def caller_key(scope: Scope) -> str:
    """The token a request carries (hashed: no secret is kept), else the client's address."""
    headers = dict(scope.get("headers") or [])
    authorization = headers.get(b"authorization", b"")
    if authorization:
        return "token:" + hashlib.sha256(authorization).hexdigest()[:32]
    client = scope.get("client") or ("", 0)
    return f"addr:{client[0]}"


RespondLimited = Callable[[float], Any]  # seconds to wait -> a Starlette response (an ASGI app)


class RateLimit:
    """Answers `respond(wait)` instead of the app when the caller's bucket under `prefix` is empty."""

    def __init__(
        self, app: ASGIApp, prefix: str, buckets: TokenBuckets, respond: RespondLimited, exempt: tuple[str, ...] = ()
    ) -> None:
        self.app = app
        self.prefix = prefix
        self.exempt = exempt
        self.buckets = buckets
        self.respond = respond

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        if scope["type"] == "http" and path.startswith(self.prefix) and not path.startswith(self.exempt):
            wait = self.buckets.take(caller_key(scope))
            if wait > 0:
                await self.respond(wait)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def limited_headers(limit: float, wait: float) -> dict[str, str]:
    return {
        "X-RateLimit-Limit": f"{limit:g}",
        "X-RateLimit-Remaining": "0",
        "X-RateLimit-Reset": f"{max(math.ceil(wait * 1000), 1) / 1000:.3f}",  # rounded up: then it passes
        "Retry-After": str(max(1, math.ceil(wait))),
    }
