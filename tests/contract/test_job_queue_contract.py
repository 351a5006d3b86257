"""The job queue port (`adapters/job_queue.py: JobQueue`): `TableJobQueue` on each table (memory, SQLite, DynamoDB
on moto). Lanes in order (apply ▸ plan ▸ speculative), then the time a job becomes
available, then job id and attempt; a delayed job waits; of concurrent takers exactly one gets each job; an
organization sees only its own jobs; `queued` lists them in take order; an enqueue wakes its organization's waiters."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from implementations import IMPLEMENTATIONS, open_table
from terrace.adapters.condition_job_signal import ConditionJobSignal
from terrace.adapters.job_queue import JobQueue, QueuedJob
from terrace.adapters.table import Item, Table
from terrace.adapters.table_job_queue import TableJobQueue

START_MS = 5_000_000


class Clock:
    def __init__(self) -> None:
        self.ms = START_MS

    def now_ms(self) -> int:
        return self.ms

    def seconds(self) -> float:
        return self.ms / 1000


class Rendezvous:
    """Around a table: each taker's first read of the queue waits until every taker has read it, so all of them
    saw the same jobs before any of them takes one (the race a conditional take must win for exactly one)."""

    def __init__(self, table: Table, takers: int) -> None:
        self._table = table
        self._all_read = threading.Barrier(takers)
        self._waited: set[int] = set()

    def query(self, pk: str, **kwargs: Any) -> list[Item]:
        items = self._table.query(pk, **kwargs)
        if threading.get_ident() not in self._waited:
            self._waited.add(threading.get_ident())
            self._all_read.wait(60)
        return items

    def __getattr__(self, name: str) -> Any:
        return getattr(self._table, name)


@dataclass
class Subject:
    queue: JobQueue
    clock: Clock
    signal: ConditionJobSignal
    table: Table


@pytest.fixture(params=IMPLEMENTATIONS)
def subject(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Subject]:
    kind = request.param
    clock = Clock()
    signal = ConditionJobSignal(clock=clock.seconds)
    with open_table(kind, tmp_path, lambda: str(request.getfixturevalue("moto_endpoint"))) as table:
        queue: JobQueue = TableJobQueue(table, now_ms=clock.now_ms, signal=signal)
        yield Subject(queue, clock, signal, table)


def job(job_id: str, phase: str = "plan", attempt: int = 1, run_id: str = "run-1") -> dict[str, Any]:
    return {"job_id": job_id, "run_id": run_id, "phase": phase, "attempt": attempt}


def take_all(queue: JobQueue, organization: str) -> list[str]:
    taken = []
    while (got := queue.take(organization)) is not None:
        taken.append(got.job_id)
    return taken


def test_lanes_are_taken_apply_then_plan_then_speculative(subject: Subject) -> None:
    queue = subject.queue
    queue.enqueue("acme", "speculative", job("plan-spec"))
    queue.enqueue("acme", "plan", job("plan-1"))
    queue.enqueue("acme", "apply", job("apply-1", "apply"))  # enqueued last, taken first
    assert take_all(queue, "acme") == ["apply-1", "plan-1", "plan-spec"]
    assert queue.take("acme") is None


def test_within_a_lane_the_earliest_available_first_then_job_id(subject: Subject) -> None:
    queue, clock = subject.queue, subject.clock
    queue.enqueue("acme", "plan", job("plan-b"))
    queue.enqueue("acme", "plan", job("plan-a"))  # same instant: job id decides
    clock.ms += 1
    queue.enqueue("acme", "plan", job("plan-0"))  # later: after both, whatever its id
    assert take_all(queue, "acme") == ["plan-a", "plan-b", "plan-0"]


def test_queued_lists_every_job_in_take_order_delayed_ones_included(subject: Subject) -> None:
    queue = subject.queue
    queue.enqueue("acme", "plan", job("plan-late"), delay_s=30)
    queue.enqueue("acme", "speculative", job("plan-spec"))
    queue.enqueue("acme", "apply", job("apply-1", "apply", run_id="run-2"))
    queue.enqueue("acme", "plan", job("plan-now"))
    listed = queue.queued("acme")
    assert [q.job_id for q in listed] == ["apply-1", "plan-now", "plan-late", "plan-spec"]
    first = listed[0]
    assert (first.organization, first.lane, first.run_id, first.phase, first.attempt) == (
        "acme",
        "apply",
        "run-2",
        "apply",
        1,
    )
    assert queue.queued("acme") == listed  # listing takes nothing


def test_a_delayed_job_waits_while_a_lower_lane_is_taken(subject: Subject) -> None:
    queue, clock = subject.queue, subject.clock
    queue.enqueue("acme", "apply", job("apply-1", "apply", attempt=2), delay_s=4)
    queue.enqueue("acme", "plan", job("plan-1"))
    (waiting, _) = queue.queued("acme")
    assert (waiting.attempt, waiting.delay_s, waiting.available_at_ms) == (2, 4, START_MS + 4_000)
    assert take_all(queue, "acme") == ["plan-1"]  # the apply still backs off
    clock.ms += 3_999
    assert queue.take("acme") is None
    clock.ms += 1
    got = queue.take("acme")
    assert got is not None and (got.job_id, got.attempt, got.delay_s) == ("apply-1", 2, 4)


def test_a_take_of_some_lanes_leaves_the_others(subject: Subject) -> None:
    queue = subject.queue
    queue.enqueue("acme", "apply", job("apply-1", "apply"))
    queue.enqueue("acme", "speculative", job("plan-2", run_id="run-2"))
    got = queue.take("acme", ("speculative",))  # a Spot runner's take: speculative plans only
    assert got is not None and got.job_id == "plan-2"
    assert queue.take("acme", ("speculative",)) is None
    assert take_all(queue, "acme") == ["apply-1"]


def test_a_negative_delay_is_none(subject: Subject) -> None:
    subject.queue.enqueue("acme", "plan", job("plan-1"), delay_s=-5)
    (queued,) = subject.queue.queued("acme")
    assert (queued.delay_s, queued.available_at_ms) == (0, START_MS)


def test_a_retry_is_a_new_entry_beside_the_earlier_attempt(subject: Subject) -> None:
    queue = subject.queue
    queue.enqueue("acme", "plan", job("plan-1", attempt=1))
    queue.enqueue("acme", "plan", job("plan-1", attempt=2))
    assert [q.attempt for q in queue.queued("acme")] == [1, 2]


def test_an_unknown_lane_is_refused_and_queues_nothing(subject: Subject) -> None:
    with pytest.raises(ValueError):
        subject.queue.enqueue("acme", "bogus", job("plan-1"))
    assert subject.queue.queued("acme") == []


def test_each_organization_sees_only_its_own_jobs(subject: Subject) -> None:
    queue = subject.queue
    queue.enqueue("globex", "apply", job("apply-globex", "apply"))
    queue.enqueue("acme", "plan", job("plan-acme"))
    queue.enqueue("acme-2", "apply", job("apply-acme-2", "apply"))  # a name that extends another's
    assert [q.job_id for q in queue.queued("acme")] == ["plan-acme"]
    assert take_all(queue, "acme") == ["plan-acme"]
    assert [q.organization for q in queue.queued("globex")] == ["globex"]
    assert take_all(queue, "globex") == ["apply-globex"]
    assert take_all(queue, "acme-2") == ["apply-acme-2"]
    assert take_all(queue, "nobody") == []


def test_of_two_takers_that_saw_the_same_job_exactly_one_gets_it(subject: Subject) -> None:
    subject.queue.enqueue("acme", "plan", job("plan-1"))
    queue = TableJobQueue(Rendezvous(subject.table, takers=2), now_ms=subject.clock.now_ms)  # type: ignore[arg-type]
    got: list[QueuedJob | None] = []
    takers = [threading.Thread(target=lambda: got.append(queue.take("acme"))) for _ in range(2)]
    for taker in takers:
        taker.start()
    for taker in takers:
        taker.join(120)
    assert not any(t.is_alive() for t in takers) and len(got) == 2
    assert sorted(q.job_id if q else "nothing" for q in got) == ["nothing", "plan-1"]


def test_of_concurrent_takers_exactly_one_gets_each_job(subject: Subject) -> None:
    queue = subject.queue
    jobs = [f"plan-{n:02d}" for n in range(12)]
    for job_id in jobs:
        queue.enqueue("acme", "plan", job(job_id))
    takers = 4
    start = threading.Barrier(takers)
    taken: list[list[str]] = [[] for _ in range(takers)]
    failures: list[BaseException] = []

    def taker(mine: list[str]) -> None:
        try:
            start.wait(60)  # every taker asks at once
            mine.extend(take_all(queue, "acme"))
        except BaseException as error:  # noqa: BLE001 - reported by the assertion below
            failures.append(error)

    threads = [threading.Thread(target=taker, args=(mine,)) for mine in taken]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert failures == [] and not any(t.is_alive() for t in threads)
    every = [job_id for mine in taken for job_id in mine]
    assert sorted(every) == jobs  # each job once: none lost, none taken twice
    assert queue.queued("acme") == []


def test_an_enqueue_wakes_the_organizations_waiters(subject: Subject) -> None:
    signal = subject.signal
    acme, globex = signal.mark("acme"), signal.mark("globex")
    subject.queue.enqueue("acme", "plan", job("plan-1"))
    assert signal.wait("acme", acme, 0) is True
    assert signal.wait("globex", globex, 0) is False


def test_a_delayed_enqueue_wakes_waiters_when_it_comes_due(subject: Subject) -> None:
    signal, clock = subject.signal, subject.clock
    mark = signal.mark("acme")
    subject.queue.enqueue("acme", "plan", job("plan-1"), delay_s=4)
    assert signal.wait("acme", mark, 0) is False
    clock.ms += 4_000
    assert signal.wait("acme", mark, 60) is True  # due: look again (at once: the clock is frozen)
