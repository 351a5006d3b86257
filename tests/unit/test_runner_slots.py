"""Runner slots: a runner listed live and then gone gives its slot back at the next reconcile (the proof's load
runs found slots of exited runners held for GRACE_S, two minutes, while phases waited); a runner never listed
yet (just launched) keeps its slot for the grace."""

from __future__ import annotations

import pytest
from terrace.adapters.memory_table import MemoryTable
from terrace.services.runs import runner_slots
from terrace.services.runs.runner_slots import RunnerSlots
from terrace.services.runs.store_slots import RunnerSlotStore


@pytest.fixture
def now(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    moment = [1_000_000.0]
    monkeypatch.setattr(runner_slots.clock, "epoch", lambda: moment[0])
    return moment


def test_a_runner_seen_live_then_gone_frees_its_slot_at_once(now: list[float]) -> None:
    slots = RunnerSlots(RunnerSlotStore(MemoryTable()), max_runners=2)
    assert slots.acquire("tok-a") and slots.acquire("tok-b")
    assert not slots.acquire("tok-c")
    assert slots.reconcile(["tok-a", "tok-b"]) == 2
    now[0] += 5  # well within the grace
    assert slots.reconcile(["tok-b"]) == 1  # tok-a exited: listed before, gone now
    assert slots.acquire("tok-c")


def test_a_runner_never_listed_keeps_its_slot_for_the_grace(now: list[float]) -> None:
    slots = RunnerSlots(RunnerSlotStore(MemoryTable()), max_runners=2)
    assert slots.acquire("tok-new")
    assert slots.reconcile([]) == 1  # just launched: the listing may lag
    now[0] += runner_slots.GRACE_S - 1
    assert slots.reconcile([]) == 1
    now[0] += 2
    assert slots.reconcile([]) == 0  # never showed up: its slot comes back after the grace


def test_a_released_lease_is_forgotten_with_its_sighting(now: list[float]) -> None:
    slots = RunnerSlots(RunnerSlotStore(MemoryTable()), max_runners=1)
    assert slots.acquire("tok-a")
    slots.reconcile(["tok-a"])
    slots.release("tok-a")
    assert slots.held() == 0
    assert slots.acquire("tok-a")  # taken again (a relaunch under the same lease): a fresh grace applies
    assert slots.reconcile([]) == 1
