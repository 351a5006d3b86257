"""Clients that honour 429 as go-tfe does: wait for what the server says, then send the same request again.

go-tfe's `rateLimitBackoff` waits `X-RateLimit-Reset` seconds (a decimal number) plus up to 30 % of jitter, or an
exponential back-off from 100 ms when the header is absent, and gives up after 30 retries. `Retry-After` (whole
seconds) is read when `X-RateLimit-Reset` is absent. Every bench and proof client sends through these transports,
so a benchmark or a load scenario run with TFC's per-token limit on measures the server, never dies on a 429.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

RETRY_MAX = 30  # go-tfe's RetryMax
MIN_WAIT_S = 0.1  # go-tfe's RetryWaitMin for the exponential fall-back
MAX_WAIT_S = 30.0  # no single wait longer than this, whatever the server says
BACKOFF_DOUBLINGS = 5  # the back-off floor stops doubling at 3.2 s


def retry_wait(response: httpx.Response, attempt: int, jitter: random.Random | None = None) -> float:
    """Seconds to wait before sending again after `response` (a 429), on retry number `attempt` (from 0)."""
    header = response.headers.get("X-RateLimit-Reset") or response.headers.get("Retry-After")
    try:
        wait = float(header) if header is not None else 0.0
    except ValueError:
        wait = 0.0
    # never sooner than the server says, and backing off as the retries mount: clients sharing a token that all
    # come back at the reset would otherwise race for the same few slots until one runs out of retries
    wait = max(wait, MIN_WAIT_S * 2 ** min(attempt, BACKOFF_DOUBLINGS))
    spread = (jitter or random).uniform(1.0, 1.3)
    return min(MAX_WAIT_S, max(0.0, wait) * spread)


class RateLimitStats:
    """How many 429s a client waited out and for how long in total (reported by the load scenarios)."""

    def __init__(self) -> None:
        self.limited = 0
        self.waited_s = 0.0

    def add(self, wait_s: float) -> None:
        self.limited += 1
        self.waited_s += wait_s


class HonouringTransport(httpx.BaseTransport):
    """Wraps a transport: a 429 is waited out (`sleep`) and the request sent again, up to `RETRY_MAX` times."""

    def __init__(
        self,
        inner: httpx.BaseTransport | None = None,
        stats: RateLimitStats | None = None,
        sleep: Callable[[float], None] = time.sleep,
        **kwargs: Any,
    ):
        self.inner = inner or httpx.HTTPTransport(**kwargs)
        self.stats = stats or RateLimitStats()
        self.sleep = sleep

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        for attempt in range(RETRY_MAX + 1):
            response = self.inner.handle_request(request)
            if response.status_code != 429 or attempt == RETRY_MAX:
                return response
            response.read()
            response.close()
            wait = retry_wait(response, attempt)
            self.stats.add(wait)
            self.sleep(wait)
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.inner.close()


class AsyncHonouringTransport(httpx.AsyncBaseTransport):
    """The asyncio twin of `HonouringTransport`."""

    def __init__(
        self,
        inner: httpx.AsyncBaseTransport | None = None,
        stats: RateLimitStats | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        **kwargs: Any,
    ):
        self.inner = inner or httpx.AsyncHTTPTransport(**kwargs)
        self.stats = stats or RateLimitStats()
        self.sleep = sleep

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        for attempt in range(RETRY_MAX + 1):
            response = await self.inner.handle_async_request(request)
            if response.status_code != 429 or attempt == RETRY_MAX:
                return response
            await response.aread()
            await response.aclose()
            wait = retry_wait(response, attempt)
            self.stats.add(wait)
            await self.sleep(wait)
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        await self.inner.aclose()


def client(*, verify: Any = True, stats: RateLimitStats | None = None, **kwargs: Any) -> httpx.Client:
    """An httpx.Client that honours 429 (the transport carries `verify`, as httpx wants)."""
    return httpx.Client(transport=HonouringTransport(verify=verify, stats=stats), **kwargs)


def async_client(
    *, verify: Any = True, stats: RateLimitStats | None = None, limits: httpx.Limits | None = None, **kwargs: Any
) -> httpx.AsyncClient:
    transport = AsyncHonouringTransport(verify=verify, stats=stats, limits=limits or httpx.Limits())
    return httpx.AsyncClient(transport=transport, **kwargs)
