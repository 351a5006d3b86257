"""The local stack's API worker threads are a fixed pool (`local/api_threads.py`): all started before the server
answers, never more under a burst of slow requests, none retired after a lull. anyio's own pool grew with the
burst and retired idle workers, so the soak's thread count followed the machine's load (docs/reliability.md)."""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from terrace.local import api_threads
from terrace.local.stack import LocalStack

DEADLINE_S = 60.0


class GatedTable:
    """The table port; while the gate is closed every call waits for it (the request holds its worker thread)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.open = threading.Event()
        self.open.set()
        self.waiting = 0
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.inner, name)
        if not callable(attribute):
            return attribute

        def gated(*args: Any, **kwargs: Any) -> Any:
            if not self.open.is_set():
                with self._lock:
                    self.waiting += 1
                try:
                    self.open.wait(DEADLINE_S)
                finally:
                    with self._lock:
                        self.waiting -= 1
            return attribute(*args, **kwargs)

        return gated


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[tuple[LocalStack, GatedTable]]:
    gates: list[GatedTable] = []

    def wrap(table: Any, blobs: Any) -> tuple[Any, Any]:
        gates.append(GatedTable(table))
        return gates[-1], blobs

    data = tmp_path / "data"
    made = LocalStack(port=0, state_dir=data, data_dir=data, workers=False, wrap_ports=wrap)
    made.settings_overrides["api_rate_limit_per_s"] = 0  # the burst is one token's
    made.start()
    try:
        yield made, gates[0]
    finally:
        made.stop()


def _wait_until(probe: Any, what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not probe():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_the_api_worker_pool_is_fixed_under_a_burst_and_after_a_lull(stack: tuple[LocalStack, GatedTable]) -> None:
    made, table = stack
    assert made.info is not None and made.seeded is not None
    loop = made._server.loop
    pool = api_threads.API_THREADS
    assert len(api_threads.worker_threads(loop)) == pool  # all started before the first request

    table.open.clear()
    burst = 2 * pool
    context = ssl.create_default_context(cafile=made.info.ca_bundle)
    headers = {"Authorization": f"Bearer {made.seeded.token}"}
    with (
        httpx.Client(base_url=made.info.url, verify=context, headers=headers, timeout=DEADLINE_S) as http,
        ThreadPoolExecutor(max_workers=burst) as clients,
    ):
        answers = [clients.submit(http.get, f"/api/v2/organizations/{made.organization}") for _ in range(burst)]
        try:
            _wait_until(lambda: table.waiting >= pool, f"{pool} requests to hold every worker thread")
            assert len(api_threads.worker_threads(loop)) == pool  # the other requests wait for a worker
            assert table.waiting == pool
        finally:
            table.open.set()
        assert [answer.result().status_code for answer in answers] == [200] * burst

        # a lull: every worker idle for longer than anyio retires one after (10 s), then one request
        _wait_until(lambda: table.waiting == 0, "the burst's calls to end")
        for worker in api_threads.worker_threads(loop):
            worker.idle_since -= 3600  # type: ignore[attr-defined]
        assert http.get(f"/api/v2/organizations/{made.organization}").status_code == 200
    assert len(api_threads.worker_threads(loop)) == pool


def _shutdown_wait(connections: set[Any], tasks: set[Any]) -> api_threads.FixedPoolServer:
    import uvicorn

    server = api_threads.FixedPoolServer(uvicorn.Config(app=None))
    server.server_state.connections = connections
    server.server_state.tasks = tasks
    return server


def test_a_stop_waits_for_requests_in_flight_not_for_idle_keep_alive_connections() -> None:
    """An idle keep-alive TLS connection closes only when its client answers the close, which a client keeping a
    pool never does: uvicorn's own wait then ran the whole graceful timeout on every stop. A request in flight is
    still waited for."""
    import asyncio

    async def scenario() -> None:
        idle = _shutdown_wait(connections={object()}, tasks=set())
        await asyncio.wait_for(idle._wait_tasks_to_complete(), timeout=DEADLINE_S)  # uvicorn's waits for ever

        request = asyncio.get_running_loop().create_future()
        busy = _shutdown_wait(connections={object()}, tasks={request})
        waiting = asyncio.ensure_future(busy._wait_tasks_to_complete())
        await asyncio.sleep(0.1)
        assert not waiting.done(), "the stop did not wait for the request in flight"
        busy.server_state.tasks.clear()
        await asyncio.wait_for(waiting, timeout=DEADLINE_S)

    asyncio.run(scenario())
