"""Bench and proof clients honour a 429 as go-tfe does (`bench/ratelimit.py`): `make bench` died on TFC's per-token
limit (queue_throughput, lock_contention) because its clients took a 429 for an answer."""

from __future__ import annotations

import asyncio
import os
import sys
import time

import httpx
import pytest
from state_helpers import make_env
from terrace.config import Settings

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if REPO not in sys.path:  # bench/ is a top-level package of the repository, not of the installed project
    sys.path.insert(0, REPO)

from bench import ratelimit  # noqa: E402

LIMIT = 10  # requests per second per token


def test_a_client_over_the_per_token_limit_waits_and_every_request_passes() -> None:
    env = make_env(
        Settings(table_name="memory", blob_bucket="memory", url_signing_secret="s", api_rate_limit_per_s=LIMIT)
    )
    stats = ratelimit.RateLimitStats()
    transport = ratelimit.HonouringTransport(inner=env.client._transport, stats=stats)
    with httpx.Client(transport=transport, base_url=str(env.client.base_url)) as client:
        statuses = [
            client.get(f"/api/v2/workspaces/{env.ws_id}", headers=env.auth).status_code for _ in range(LIMIT * 2)
        ]
    assert statuses == [200] * (LIMIT * 2)
    assert stats.limited >= 1  # past the burst the server said 429, and the client waited it out
    assert 0 < stats.waited_s < 30


def test_the_wait_is_the_servers_reset_with_go_tfes_jitter_and_a_growing_back_off_floor() -> None:
    said = httpx.Response(429, headers={"X-RateLimit-Reset": "0.5"})
    assert all(0.5 <= ratelimit.retry_wait(said, attempt) <= 0.65 for attempt in range(3))
    # a client that keeps losing the race for its token's slots backs off, never sooner than the server said
    assert 1.6 <= ratelimit.retry_wait(said, 4) <= 2.08 and 3.2 <= ratelimit.retry_wait(said, 9) <= 4.16
    retry_after = httpx.Response(429, headers={"Retry-After": "2"})
    assert 2 <= ratelimit.retry_wait(retry_after, 0) <= 2.6
    silent = httpx.Response(429)
    assert 0.1 <= ratelimit.retry_wait(silent, 0) <= 0.13 and 0.8 <= ratelimit.retry_wait(silent, 3) <= 1.04


def _backed_off(slept: list[float]) -> None:
    """Each wait between two sends was the growing back-off floor with go-tfe's jitter (about 96 s of real waiting
    over the thirty retries, which the tests hand to a recording sleep instead)."""
    floors = [ratelimit.MIN_WAIT_S * 2 ** min(attempt, ratelimit.BACKOFF_DOUBLINGS) for attempt in range(len(slept))]
    assert all(floor <= wait <= floor * 1.3 for wait, floor in zip(slept, floors, strict=True)), slept
    assert sum(floors) > 80


def always_limited(calls: list[httpx.Request]) -> httpx.MockTransport:
    def answer(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(429, headers={"X-RateLimit-Reset": "0"})

    return httpx.MockTransport(answer)


def test_the_async_client_gives_up_after_go_tfes_thirty_retries() -> None:
    calls: list[httpx.Request] = []
    slept: list[float] = []
    stats = ratelimit.RateLimitStats()

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    async def ask() -> int:
        transport = ratelimit.AsyncHonouringTransport(inner=always_limited(calls), stats=stats, sleep=sleep)
        async with httpx.AsyncClient(transport=transport, base_url="https://terrace.test") as client:
            return (await client.get("/api/v2/ping")).status_code

    assert asyncio.run(ask()) == 429
    assert len(calls) == ratelimit.RETRY_MAX + 1
    assert len(slept) == stats.limited == ratelimit.RETRY_MAX  # a wait between each two sends, none after the last
    _backed_off(slept)
    assert stats.waited_s == pytest.approx(sum(slept))


def test_the_client_gives_up_after_go_tfes_thirty_retries() -> None:
    calls: list[httpx.Request] = []
    slept: list[float] = []
    transport = ratelimit.HonouringTransport(inner=always_limited(calls), sleep=slept.append)
    with httpx.Client(transport=transport, base_url="https://terrace.test") as client:
        assert client.get("/api/v2/ping").status_code == 429
    assert len(calls) == ratelimit.RETRY_MAX + 1
    assert len(slept) == ratelimit.RETRY_MAX
    _backed_off(slept)


def test_the_clients_sleep_for_real_unless_told_otherwise() -> None:
    assert ratelimit.HonouringTransport(inner=always_limited([])).sleep is time.sleep
    assert ratelimit.AsyncHonouringTransport(inner=always_limited([])).sleep is asyncio.sleep
