"""The job queue port: runs' phases waiting for a runner of their organization.

A job waits on a lane (apply ▸ plan ▸ speculative, `definitions.LANE_PRIORITY`) until it is available (retry
back-off); `take` removes the organization's next available one, highest lane first, and of two takers exactly one
gets it. Implementation: `table_job_queue.py` (an index in the table, on any table); the scaler is woken by the
lanes (`kicking_lanes.py`), not by this queue. `tests/contract/test_job_queue_contract.py` is the contract.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class QueuedJob:
    organization: str
    lane: str
    job_id: str
    run_id: str
    phase: str
    attempt: int
    available_at_ms: int
    delay_s: int = 0


class JobQueue(Protocol):
    def enqueue(self, organization: str, lane: str, job: dict[str, Any], delay_s: int = 0) -> None:
        """Queue `job` ({job_id, run_id, phase, attempt}) on `lane`, available after `delay_s`."""
        ...

    def take(self, organization: str, lanes: Collection[str] = ()) -> QueuedJob | None:
        """Remove and return the organization's next available job (highest lane first; of `lanes` only, when
        given), or None."""
        ...

    def queued(self, organization: str) -> list[QueuedJob]:
        """The organization's queued jobs in take order (delayed ones included)."""
        ...
