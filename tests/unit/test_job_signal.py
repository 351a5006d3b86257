"""The job signal (adapters/condition_job_signal.py): what wakes a runner's long-poll, per organization."""

from __future__ import annotations

import threading

from terrace.adapters.condition_job_signal import ConditionJobSignal as JobSignal


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_an_enqueue_after_the_mark_is_seen_even_before_the_wait_starts() -> None:
    signal = JobSignal()
    mark = signal.mark("acme")
    signal.notify("globex")
    assert signal.wait("acme", mark, 0) is False  # another organization's job: nothing new here
    signal.notify("acme")
    assert signal.wait("acme", mark, 0) is True  # no lost wake-up between the look and the wait
    assert signal.wait("acme", signal.mark("acme"), 0) is False


def test_a_delayed_job_wakes_waiters_when_it_comes_due() -> None:
    clock = Clock()
    signal = JobSignal(clock=clock)
    mark = signal.mark("acme")
    signal.notify("acme", delay_s=5)
    assert signal.wait("acme", mark, 0) is False  # not due yet
    clock.now += 5
    assert signal.wait("acme", mark, 60) is True  # due: look again (returns at once, the clock is frozen)
    assert signal.wait("acme", signal.mark("acme"), 0) is False  # the look after this mark sees it: forgotten


def test_a_blocked_wait_is_woken_by_notify_from_another_thread() -> None:
    signal = JobSignal()
    mark = signal.mark("acme")
    woke: list[bool] = []
    waiter = threading.Thread(target=lambda: woke.append(signal.wait("acme", mark, 300)))
    waiter.start()
    signal.notify("acme")
    waiter.join(60)
    assert not waiter.is_alive() and woke == [True]


def test_with_a_recheck_interval_a_wait_looks_again_without_a_notify() -> None:
    """On AWS (another Lambda may enqueue) a waiter looks again every `recheck_s`."""
    signal = JobSignal(recheck_s=0.01)
    assert signal.wait("acme", signal.mark("acme"), 300) is True


def test_closing_ends_every_wait_with_nothing_new() -> None:
    signal = JobSignal()
    mark = signal.mark("acme")
    ended: list[bool] = []
    waiter = threading.Thread(target=lambda: ended.append(signal.wait("acme", mark, 300)))
    waiter.start()
    signal.close()
    waiter.join(60)
    assert not waiter.is_alive() and ended == [False]
    assert signal.wait("acme", signal.mark("acme"), 300) is False  # and any later wait returns at once
