"""The per-organization job queue (`job_queue.JobQueue`) as an index in the table.

Queued jobs are index items under `org#<org>#jobs`, sorted by lane priority (apply ▸ plan ▸
speculative), then the time they become available (retry back-off), then job id and attempt. A
runner serves one organization, so it only ever reads its organization's partition. Taking a job is
a conditional delete of its item: of two takers, exactly one wins. The same code runs on DynamoDB,
on moto, on SQLite and on the in-memory table.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from terrace.adapters.definitions import LANE_PRIORITY
from terrace.adapters.job_queue import QueuedJob
from terrace.adapters.job_signal import JobSignal
from terrace.adapters.table import ConditionFailed, Put, Table
from terrace.domain import clock

TAKE_SCAN = 50  # queued items read per take; items still delayed are skipped
STALE_AFTER_S = 7 * 24 * 3600  # table TTL: an entry nobody took (its run ended meanwhile) goes eventually


def _partition(organization: str) -> str:
    return f"org#{organization}#jobs"


def _from_item(item: dict[str, Any]) -> QueuedJob:
    return QueuedJob(
        organization=item["organization"],
        lane=item["lane"],
        job_id=item["job_id"],
        run_id=item["run_id"],
        phase=item["phase"],
        attempt=int(item["attempt"]),
        available_at_ms=int(item["available_at_ms"]),
        delay_s=int(item.get("delay_s", 0)),
    )


class TableJobQueue:
    """`signal` (if any) hears of every enqueue: waiting runners of the organization wake at once."""

    def __init__(self, table: Table, now_ms: Callable[[], int] | None = None, signal: JobSignal | None = None) -> None:
        self._table = table
        self._now_ms = now_ms or (lambda: int(clock.epoch() * 1000))
        self.signal = signal

    def enqueue(self, organization: str, lane: str, job: dict[str, Any], delay_s: int = 0) -> None:
        if lane not in LANE_PRIORITY:
            raise ValueError(f"unknown lane {lane!r}")
        delay_s = max(0, delay_s)
        available = self._now_ms() + delay_s * 1000
        attempt = int(job.get("attempt", 1))
        sort_key = f"{LANE_PRIORITY.index(lane)}#{available:015d}#{job['job_id']}#{attempt:04d}"
        item = {
            "pk": _partition(organization),
            "sk": sort_key,
            "organization": organization,
            "lane": lane,
            "job_id": job["job_id"],
            "run_id": job["run_id"],
            "phase": job["phase"],
            "attempt": attempt,
            "available_at_ms": available,
            "delay_s": delay_s,
            "version": 1,  # the conditional delete of `take` needs something to condition on
            "expires_at": available // 1000 + STALE_AFTER_S,
        }
        self._table.transact([Put(item)])
        if self.signal is not None:
            self.signal.notify(organization, delay_s)

    def take(self, organization: str, lanes: Collection[str] = ()) -> QueuedJob | None:
        if lanes:  # a runner of some lanes (a Spot runner: speculative plans only) reads those lanes' items only
            for lane in sorted(set(lanes) & set(LANE_PRIORITY), key=LANE_PRIORITY.index):
                if (taken := self._take(organization, f"{LANE_PRIORITY.index(lane)}#")) is not None:
                    return taken
            return None
        return self._take(organization, None)

    def _take(self, organization: str, prefix: str | None) -> QueuedJob | None:
        now = self._now_ms()
        for item in self._table.query(_partition(organization), prefix=prefix, limit=TAKE_SCAN):
            if int(item["available_at_ms"]) > now:
                continue  # still backing off; a lower lane may be ready
            try:
                self._table.delete(item["pk"], item["sk"], if_version=item["version"])
            except ConditionFailed:
                continue  # another runner took it first
            return _from_item(item)
        return None

    def queued(self, organization: str) -> list[QueuedJob]:
        return [_from_item(item) for item in self._table.query(_partition(organization))]
