"""The local stack's API worker threads: a fixed pool, started with the server and kept.

FastAPI runs every sync route and dependency (and Starlette a sync response body, the blob URLs their file calls)
on anyio's worker threads. anyio starts one whenever all are busy, up to its limiter (40 by default), and retires
one that has been idle for 10 s when the next call comes: under bursts the pool grows, in a lull it shrinks, so the
server's thread count followed the load of the machine (26-37 threads in one five-minute soak, 20 % between its
halves: docs/reliability.md, "Soak"). The local stack (`terrace serve`, `terrace dev`) instead starts `API_THREADS`
workers before it accepts a connection, caps the limiter at that number and never retires one: its thread count
is the same from the first request to the last. The Lambda's API is not served here and keeps anyio's defaults.

The size: the SQLite pool holds 8 connections (`adapters/sqlite_table_pool.py`), so more threads than that in the
table only wait for one; the others serve what holds a thread outside the table (serializing, blob files) and the
runners' and agents' long-polls (`/jobs/next` waits up to 20 s on a thread it holds).
"""

from __future__ import annotations

import asyncio
import logging
import math
import socket
import threading

import anyio
import anyio.to_thread
import uvicorn
from anyio._backends import _asyncio as anyio_asyncio

API_THREADS = 24
START_TIMEOUT_S = 30.0  # every worker is waiting at the barrier well before this, even on a loaded machine
log = logging.getLogger("terrace.local")


async def start_fixed_pool(threads: int = API_THREADS) -> None:
    """In the server's event loop, before it serves: cap the default thread limiter at `threads`, start that many
    workers at once (each waits at a barrier until all are there, so none is reused for another's call) and keep
    them (anyio retires a worker idle for `WorkerThread.MAX_IDLE_TIME`; here none is ever idle too long)."""
    if threads < 1:
        raise ValueError("threads must be at least 1")
    anyio_asyncio.WorkerThread.MAX_IDLE_TIME = math.inf  # type: ignore[assignment]  # anyio's own knob, a class attribute
    anyio.to_thread.current_default_thread_limiter().total_tokens = threads
    barrier = threading.Barrier(threads)
    broken: list[bool] = []

    def arrive() -> None:
        try:
            barrier.wait(START_TIMEOUT_S)
        except threading.BrokenBarrierError:
            broken.append(True)

    async with anyio.create_task_group() as group:
        for _ in range(threads):
            group.start_soon(anyio.to_thread.run_sync, arrive)
    if broken:  # a very slow start: the pool grows the rest on demand, as anyio's would
        log.warning("not all %d API worker threads started within %.0f s", threads, START_TIMEOUT_S)


class FixedPoolServer(uvicorn.Server):
    """uvicorn's server, its API worker threads a fixed pool started before it listens."""

    threads = API_THREADS
    loop: asyncio.AbstractEventLoop | None = None  # the server's, once it started

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        self.loop = asyncio.get_running_loop()
        await start_fixed_pool(self.threads)
        await super().startup(sockets)

    async def _wait_tasks_to_complete(self) -> None:
        """At shutdown, wait for the requests in flight (up to the graceful timeout), not for idle connections:
        uvicorn waits for every connection to close, and an idle keep-alive TLS connection closes only when its
        client answers the close, which a client keeping a pool never does, so every stop took the whole graceful
        timeout (2 s). An idle connection has no request to lose."""
        while self.server_state.tasks and not self.force_exit:
            await asyncio.sleep(0.02)


def worker_threads(loop: asyncio.AbstractEventLoop | None) -> list[threading.Thread]:
    """The live anyio worker threads of the event loop `loop` (a server's)."""
    found = [thread for thread in threading.enumerate() if isinstance(thread, anyio_asyncio.WorkerThread)]
    return [thread for thread in found if thread.loop is loop and thread.is_alive()]
