"""The outbox port (`adapters/outbox.py: Outbox`): `TableOutbox` on each table (memory, SQLite, DynamoDB on moto),
and the relay (`services/outbox_relay.py`) over it. An event staged in a transaction exists exactly when that
transaction committed; `pending` lists entries oldest first, only those older than the grace asked for; `remove`
forgets them (twice is fine); the relay publishes in order, removes what it published, keeps what it could not,
and its sweep publishes what a committer left behind."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from implementations import IMPLEMENTATIONS, open_table
from terrace.adapters.memory_events import MemoryEventPublisher
from terrace.adapters.table import Check, ConditionFailed, Put, Table
from terrace.adapters.table_outbox import TableOutbox
from terrace.services.outbox_relay import OutboxRelay


class Clock:
    def __init__(self) -> None:
        self.ms = 7_000_000

    def now_ms(self) -> int:
        return self.ms


@dataclass
class Subject:
    outbox: TableOutbox
    clock: Clock
    table: Table


@pytest.fixture(params=IMPLEMENTATIONS)
def subject(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Subject]:
    clock = Clock()
    with open_table(request.param, tmp_path, lambda: str(request.getfixturevalue("moto_endpoint"))) as table:
        yield Subject(TableOutbox(table, now_ms=clock.now_ms), clock, table)


def event(n: int) -> dict[str, Any]:
    return {"type": "run.status_changed", "run_id": f"run-{n}", "from": None, "statuses": ["pending", "plan_queued"]}


def commit(subject: Subject, *events: dict[str, Any]) -> None:
    """Each event staged in a transaction of its own with a change it tells of."""
    for staged in events:
        entry, write = subject.outbox.stage(staged)
        subject.table.transact([Put({"pk": staged["run_id"], "sk": "run", "version": 1}, if_absent=True), write])
        subject.clock.ms += 1


def test_a_committed_event_is_pending_as_it_was_staged_oldest_first(subject: Subject) -> None:
    commit(subject, event(1), event(2), event(3))
    pending = subject.outbox.pending()
    assert [entry.event for entry in pending] == [event(1), event(2), event(3)]  # null and list kept as they were
    assert [entry.staged_ms for entry in pending] == [7_000_000, 7_000_001, 7_000_002]
    assert [entry.event for entry in subject.outbox.pending(limit=2)] == [event(1), event(2)]


def test_an_event_of_a_transaction_that_lost_is_not_staged(subject: Subject) -> None:
    _, write = subject.outbox.stage(event(1))
    with pytest.raises(ConditionFailed):
        subject.table.transact([Check("run-1", "run"), write])  # the change it tells of did not happen
    assert subject.outbox.pending() == []


def test_pending_leaves_out_entries_younger_than_the_grace(subject: Subject) -> None:
    commit(subject, event(1))
    subject.clock.ms += 4_000
    commit(subject, event(2))
    assert [entry.event["run_id"] for entry in subject.outbox.pending(older_than_s=3)] == ["run-1"]
    subject.clock.ms += 3_000
    assert [entry.event["run_id"] for entry in subject.outbox.pending(older_than_s=3)] == ["run-1", "run-2"]


def test_removed_entries_are_gone_and_removing_again_is_fine(subject: Subject) -> None:
    commit(subject, event(1), event(2))
    first, second = subject.outbox.pending()
    subject.outbox.remove([first])
    subject.outbox.remove([first])
    subject.outbox.remove([])
    assert subject.outbox.pending() == [second]


class FailingAfter(MemoryEventPublisher):
    def __init__(self, allowed: int) -> None:
        super().__init__()
        self.allowed = allowed

    def publish(self, event: dict[str, Any]) -> None:
        if len(self.events) >= self.allowed:
            raise ConnectionError("the queue is away")
        super().publish(event)


def test_the_relay_publishes_in_order_removes_what_it_published_and_sweeps_what_was_left(subject: Subject) -> None:
    publisher = FailingAfter(allowed=2)
    relay = OutboxRelay(subject.outbox, publisher, grace_s=10)
    staged = []
    for n in (1, 2, 3):
        entry, write = subject.outbox.stage(event(n))
        subject.table.transact([write])
        staged.append(entry)
    assert relay.deliver(staged) == 2  # the third publish failed: it stays staged
    assert [e["run_id"] for e in publisher.events] == ["run-1", "run-2"]
    assert [entry.event["run_id"] for entry in subject.outbox.pending()] == ["run-3"]
    publisher.allowed = 10
    assert relay.sweep_if_due() is None  # younger than the grace: its committer may still be publishing it
    subject.clock.ms += 10_000
    assert relay.sweep_if_due() == {"relayed": 1, "found": 1}
    assert [e["run_id"] for e in publisher.events] == ["run-1", "run-2", "run-3"]
    assert subject.outbox.pending() == [] and relay.sweep_if_due() is None
