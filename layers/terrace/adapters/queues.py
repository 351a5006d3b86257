"""The per-organization job queue (an index in the table) and the events queue (SQS).

Queued jobs are index items under `org#<org>#jobs`, sorted by lane priority (apply ▸ plan ▸
speculative), then the time they become available (retry back-off), then job id and attempt. A
runner serves one organization, so it only ever reads its organization's partition. Taking a job is
a conditional delete of its item: of two takers, exactly one wins. The same code runs on DynamoDB,
on moto and on the in-memory table.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from terrace.adapters.definitions import LANE_PRIORITY
from terrace.adapters.job_signal import JobSignal
from terrace.adapters.table import ConditionFailed, Put, Table
from terrace.domain import clock

log = logging.getLogger("terrace.queues")
TAKE_SCAN = 50  # queued items read per take; items still delayed are skipped
STALE_AFTER_S = 7 * 24 * 3600  # table TTL: an entry nobody took (its run ended meanwhile) goes eventually


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

    def take(self, organization: str) -> QueuedJob | None:
        """Remove and return the organization's next available job (highest lane first), or None."""
        ...

    def queued(self, organization: str) -> list[QueuedJob]:
        """The organization's queued jobs in take order (delayed ones included)."""
        ...


class EventPublisher(Protocol):
    def publish(self, event: dict[str, Any]) -> None: ...


@dataclass(frozen=True)
class ReceivedEvent:
    body: dict[str, Any]
    receipt: str  # acknowledges this delivery only
    receive_count: int  # deliveries so far, this one included


class EventQueue(EventPublisher, Protocol):
    """The events queue seen by its consumer (SQS semantics): a received event is invisible for `visibility_s`,
    then delivered again unless acknowledged; past `max_receives` deliveries it moves to the dead letters."""

    def publish(self, event: dict[str, Any], delay_s: int = 0) -> None: ...

    def receive(
        self, max_events: int = 10, wait_s: float = 0, visibility_s: int | None = None
    ) -> list[ReceivedEvent]: ...

    def ack(self, receipt: str) -> None: ...

    def dead_letters(self) -> list[dict[str, Any]]: ...


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

    def take(self, organization: str) -> QueuedJob | None:
        now = self._now_ms()
        for item in self._table.query(_partition(organization), limit=TAKE_SCAN):
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

    def take(self, organization: str) -> QueuedJob | None:
        return self._inner.take(organization)

    def queued(self, organization: str) -> list[QueuedJob]:
        return self._inner.queued(organization)


class SqsEventPublisher:
    def __init__(self, client: Any, queue_url: str, dead_letter_url: str | None = None) -> None:
        self._client = client
        self._url = queue_url
        self._dead_letter_url = dead_letter_url  # the queue's redrive target, if it has one

    def publish(self, event: dict[str, Any], delay_s: int = 0) -> None:
        extra = {"DelaySeconds": delay_s} if delay_s else {}
        self._client.send_message(QueueUrl=self._url, MessageBody=json.dumps(event), **extra)

    def receive(self, max_events: int = 10, wait_s: float = 0, visibility_s: int | None = None) -> list[ReceivedEvent]:
        extra = {"VisibilityTimeout": visibility_s} if visibility_s is not None else {}
        response = self._client.receive_message(
            QueueUrl=self._url,
            MaxNumberOfMessages=max_events,
            WaitTimeSeconds=int(wait_s),
            AttributeNames=["ApproximateReceiveCount"],
            **extra,
        )
        return [
            ReceivedEvent(
                json.loads(m["Body"]),
                m["ReceiptHandle"],
                int(m.get("Attributes", {}).get("ApproximateReceiveCount", 1)),
            )
            for m in response.get("Messages", [])
        ]

    def ack(self, receipt: str) -> None:
        self._client.delete_message(QueueUrl=self._url, ReceiptHandle=receipt)

    def dead_letters(self) -> list[dict[str, Any]]:
        if not self._dead_letter_url:
            return []
        response = self._client.receive_message(
            QueueUrl=self._dead_letter_url, MaxNumberOfMessages=10, VisibilityTimeout=0
        )
        return [json.loads(m["Body"]) for m in response.get("Messages", [])]


class MemoryEventPublisher:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def publish(self, event: dict[str, Any]) -> None:
        self.events.append(dict(event))
