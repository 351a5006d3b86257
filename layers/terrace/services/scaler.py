"""The scaler: starts runners for the backlog, within a configured maximum."""

from __future__ import annotations

import logging
from typing import Any, Protocol

from terrace.adapters.queues import JobQueue

log = logging.getLogger("terrace.scaler")


class RunnerLauncher(Protocol):
    def live_count(self) -> int: ...

    def launch(self, count: int) -> int: ...


class Scaler:
    def __init__(self, queue: JobQueue, launcher: RunnerLauncher | None, max_runners: int) -> None:
        self._queue = queue
        self._launcher = launcher
        self._max = max_runners

    def scale_once(self) -> dict[str, Any]:
        depth = self._queue.depth()
        backlog = sum(depth.values())
        if self._launcher is None:
            return {"backlog": backlog, "live": None, "started": 0, "reason": "no launcher configured"}
        live = self._launcher.live_count()
        wanted = max(0, min(backlog, self._max) - live)
        started = self._launcher.launch(wanted) if wanted else 0
        if started:
            log.info("started %d runner(s) for a backlog of %d (%d live)", started, backlog, live)
        return {"backlog": backlog, "depth": depth, "live": live, "started": started}
