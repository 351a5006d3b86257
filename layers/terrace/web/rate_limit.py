"""Rate limiting per API token, as TFC does (30 requests per second per token): a token bucket per caller, the
token once it has authenticated a request, else the client's address (`RateLimit`).

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


AUTHENTICATED = "terrace.authenticated"  # set in the request's state by `web/deps.py` once its token is valid


def bearer_of(header: str) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, as `web/deps.py: bearer_token` reads it."""
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer":
        return None
    return value.strip() or None


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()[:32]  # no secret is kept


def _client(scope: Scope) -> str:
    client = scope.get("client") or ("", 0)
    return f"addr:{client[0]}"


RespondLimited = Callable[[float], Any]  # seconds to wait -> a Starlette response (an ASGI app)


class RateLimit:
    """Answers `respond(wait)` instead of the app when the caller's bucket under `prefix` is empty.

    The caller is its token once that token has authenticated a request (the token as the API reads it, so
    spaces around it change nothing), else its client address: garbage tokens, however many, share their
    address's bucket. A token's first request counts in both.
    """

    def __init__(
        self, app: ASGIApp, prefix: str, buckets: TokenBuckets, respond: RespondLimited, exempt: tuple[str, ...] = ()
    ) -> None:
        self.app = app
        self.prefix = prefix
        self.exempt = exempt
        self.buckets = buckets
        self.respond = respond
        self.known: OrderedDict[str, None] = OrderedDict()  # hashes of tokens that authenticated, most recent last

    def caller_key(self, scope: Scope) -> tuple[str, str | None]:
        """The bucket to charge, and the hash of the request's token when it is not yet known to be valid."""
        headers = dict(scope.get("headers") or [])
        token = bearer_of(headers.get(b"authorization", b"").decode("latin-1"))
        hashed = token_hash(token) if token else None
        if hashed is not None and hashed in self.known:
            self.known.move_to_end(hashed)
            return f"token:{hashed}", None
        return _client(scope), hashed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        if not (scope["type"] == "http" and path.startswith(self.prefix) and not path.startswith(self.exempt)):
            await self.app(scope, receive, send)
            return
        key, unknown = self.caller_key(scope)
        wait = self.buckets.take(key)
        if wait > 0:
            await self.respond(wait)(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        await self.app(scope, receive, send)
        if unknown is not None and state.get(AUTHENTICATED):
            self.known[unknown] = None
            self.buckets.take(f"token:{unknown}")  # its first request counts for the token too
            while len(self.known) > MAX_CALLERS:
                self.known.popitem(last=False)


def limited_headers(limit: float, wait: float) -> dict[str, str]:
    return {
        "X-RateLimit-Limit": f"{limit:g}",
        "X-RateLimit-Remaining": "0",
        "X-RateLimit-Reset": f"{max(math.ceil(wait * 1000), 1) / 1000:.3f}",  # rounded up: then it passes
        "Retry-After": str(max(1, math.ceil(wait))),
    }
