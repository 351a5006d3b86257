"""Lock requests run off the event loop through a small lane of their own.

Many clients polling a held lock (`-lock-timeout`, CI jobs) would otherwise fill the shared thread pool
and the CPU with refusals, and the holder's state write and unlock would queue behind them. Lock requests
(TFC `actions/lock`, the http backend's LOCK) wait for one of `LOCK_LANE_WIDTH` threads without holding
anything; everything else, the holder's write and unlock included, never waits for that lane. On Lambda a
process serves one request at a time, so the lane only matters to a long-running server (`make dev`).
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from typing import TypeVar

import anyio.to_thread
from anyio import CapacityLimiter

T = TypeVar("T")
LOCK_LANE_WIDTH = 8
_lanes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, CapacityLimiter] = weakref.WeakKeyDictionary()


def _lane() -> CapacityLimiter:
    loop = asyncio.get_running_loop()
    lane = _lanes.get(loop)
    if lane is None:
        lane = _lanes[loop] = CapacityLimiter(LOCK_LANE_WIDTH)
    return lane


async def in_lock_lane(call: Callable[[], T]) -> T:
    """Run the blocking `call` (a lock attempt) on a thread of the lock lane."""
    return await anyio.to_thread.run_sync(call, limiter=_lane())
