"""The one optimistic-update loop (`services/optimistic.py`): a step whose conditional write loses re-reads and
re-decides; after its attempts it gives up with a 409 (or the caller's answer); refusals pass through untouched."""

from __future__ import annotations

from typing import Any

import pytest
from terrace.adapters.memory_table import MemoryTable
from terrace.adapters.table import ConditionFailed
from terrace.domain.errors import Conflict, Invalid
from terrace.services.optimistic import optimistic
from terrace.web.errors import status_of


class Racing:
    """A counter item in a real (memory) table, and a rival that bumps it between a step's read and write
    for the first `losses` attempts."""

    def __init__(self, losses: int) -> None:
        self.table = MemoryTable()
        self.table.put({"pk": "c", "sk": "c", "count": 0, "version": 1}, if_absent=True)
        self.losses, self.reads, self.decided = losses, 0, []  # type: list[int]

    def rival(self) -> None:
        item = self.table.get("c", "c")
        assert item is not None
        self.table.put(
            {**item, "count": item["count"] + 10, "version": item["version"] + 1}, if_version=item["version"]
        )

    def step(self) -> int:
        item = self.table.get("c", "c")  # read
        assert item is not None
        self.reads += 1
        decided = item["count"] + 1  # decide
        self.decided.append(decided)
        if self.losses:
            self.losses -= 1
            self.rival()
        self.table.put({**item, "count": decided, "version": item["version"] + 1}, if_version=item["version"])
        return decided


def test_a_loser_reads_again_and_decides_on_the_winner_s_write() -> None:
    race = Racing(losses=2)
    assert optimistic(race.step, attempts=8, exhausted="busy") == 21
    assert race.decided == [1, 11, 21]  # each attempt decided on what the last winner wrote
    stored = race.table.get("c", "c")
    assert stored is not None and stored["count"] == 21 and stored["version"] == 4


def test_it_gives_up_after_its_attempts_with_a_409_and_writes_nothing_more() -> None:
    race = Racing(losses=100)
    with pytest.raises(Conflict) as refused:
        optimistic(race.step, attempts=3, exhausted="the thing is busy; retry")
    assert type(refused.value) is Conflict and refused.value.detail == "the thing is busy; retry"
    assert status_of(refused.value) == 409  # a JSON:API 409 through `web/errors.py`
    assert race.reads == 3
    stored = race.table.get("c", "c")
    assert stored is not None and stored["count"] == 30  # only the rival's writes


def test_it_can_answer_instead_of_refusing_when_attempts_run_out() -> None:
    race = Racing(losses=100)
    assert optimistic(race.step, attempts=2, exhausted=lambda: -1) == -1
    assert race.reads == 2


def test_a_refusal_is_not_retried() -> None:
    calls: list[int] = []

    def step() -> Any:
        calls.append(1)
        raise Invalid("no")

    with pytest.raises(Invalid):
        optimistic(step, exhausted="busy")
    assert calls == [1]


def test_backoff_grows_with_each_lost_attempt(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr("terrace.services.optimistic.time.sleep", slept.append)

    def step() -> None:
        raise ConditionFailed("lost")

    with pytest.raises(Conflict):
        optimistic(step, attempts=3, backoff_s=0.01, exhausted="busy")
    assert slept == pytest.approx([0.01, 0.02, 0.03])  # as `runs.retrying` always slept
