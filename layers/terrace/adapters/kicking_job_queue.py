"""A job queue (`job_queue.JobQueue`) that wakes the scaler after each enqueue."""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from typing import Any

from terrace.adapters.job_queue import JobQueue, QueuedJob

log = logging.getLogger("terrace.queues")


class KickingJobQueue:
    """A job queue that also wakes the scaler after each enqueue (on AWS: an async Lambda invoke),
    so a runner starts within seconds instead of at the scaler's next scheduled tick."""

    def __init__(self, inner: JobQueue, kick: Callable[[], None]) -> None:
        self._inner = inner
        self._kick = kick

    def enqueue(self, organization: str, lane: str, job: dict[str, Any], delay_s: int = 0) -> None:
        self._inner.enqueue(organization, lane, job, delay_s)
        try:
            self._kick()
        except Exception:  # the scheduled tick still starts a runner
            log.exception("could not wake the scaler")

    def take(self, organization: str, lanes: Collection[str] = ()) -> QueuedJob | None:
        return self._inner.take(organization, lanes)

    def queued(self, organization: str) -> list[QueuedJob]:
        return self._inner.queued(organization)
