"""The job signal port (`adapters/job_signal.py: JobSignal`) in its two variants (`condition_job_signal.py`):
in one process (the embedded server, `make dev`, unit tests: notify alone wakes a waiter) and on AWS (the enqueue
may happen in another Lambda: a waiter also looks again every `LAMBDA_RECHECK_S`).

A waiter wakes on a notify of its organization, never on another's; a wait with nothing new ends with False at its
timeout; `close` ends every wait. No assertion here depends on how long anything took: a frozen clock keeps the
AWS variant from looking again, so only a notify or a close can end a blocked wait."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import pytest
from terrace.adapters.condition_job_signal import LAMBDA_RECHECK_S, ConditionJobSignal
from terrace.adapters.job_signal import JobSignal

JOIN_S = 60  # a deadline for a thread that must end; never reached unless the clause is broken
SHORT_S = LAMBDA_RECHECK_S / 20  # a real timeout shorter than the AWS variant's recheck
VARIANTS = ["in-process", "aws-polling"]


class FrozenClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


MakeSignal = Callable[..., JobSignal]


@pytest.fixture(params=VARIANTS)
def variant(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_signal(variant: str) -> MakeSignal:
    """make_signal(clock=None) -> a fresh signal of the variant (a frozen clock if given)."""

    def make(clock: Callable[[], float] | None = None, observers: Sequence[Callable[[str], object]] = ()) -> JobSignal:
        recheck_s = LAMBDA_RECHECK_S if variant == "aws-polling" else None
        if clock is None:
            return ConditionJobSignal(recheck_s=recheck_s, observers=observers)
        return ConditionJobSignal(recheck_s=recheck_s, clock=clock, observers=observers)

    return make


def in_thread(wait: Callable[[], bool]) -> tuple[threading.Thread, list[bool]]:
    ended: list[bool] = []
    waiter = threading.Thread(target=lambda: ended.append(wait()))
    waiter.start()
    return waiter, ended


def test_a_notify_after_the_mark_is_seen_even_before_the_wait_starts(make_signal: MakeSignal) -> None:
    signal = make_signal()
    mark = signal.mark("acme")
    signal.notify("acme")
    assert signal.wait("acme", mark, 0) is True  # no lost wake-up between the look and the wait
    assert signal.wait("acme", signal.mark("acme"), 0) is False  # a new mark has seen it


def test_another_organizations_notify_is_nothing_new(make_signal: MakeSignal) -> None:
    signal = make_signal()
    mark = signal.mark("acme")
    signal.notify("globex")
    signal.notify("acme-2")
    assert signal.wait("acme", mark, 0) is False


def test_a_blocked_waiter_wakes_on_a_notify_of_its_organization(make_signal: MakeSignal) -> None:
    signal = make_signal(FrozenClock())  # frozen: nothing but the notify can end the wait
    mark = signal.mark("acme")
    waiter, ended = in_thread(lambda: signal.wait("acme", mark, 300))
    signal.notify("acme")
    waiter.join(JOIN_S)
    assert not waiter.is_alive() and ended == [True]


def test_a_blocked_waiter_sleeps_through_another_organizations_notify(make_signal: MakeSignal) -> None:
    signal = make_signal(FrozenClock())
    mark = signal.mark("acme")
    waiter, ended = in_thread(lambda: signal.wait("acme", mark, 300))
    signal.notify("globex")  # wakes the condition, not this waiter: it sleeps on
    signal.close()  # ends the wait with nothing new; a wake by globex would have answered True
    waiter.join(JOIN_S)
    assert not waiter.is_alive() and ended == [False]


def test_a_wait_with_nothing_new_ends_with_false_at_its_timeout(make_signal: MakeSignal) -> None:
    signal = make_signal()  # the real clock: the timeout passes
    mark = signal.mark("acme")
    signal.notify("globex")
    assert signal.wait("acme", mark, SHORT_S) is False
    assert signal.wait("acme", mark, 0) is False


def test_a_delayed_job_is_new_only_once_it_comes_due(make_signal: MakeSignal) -> None:
    clock = FrozenClock()
    signal = make_signal(clock)
    mark = signal.mark("acme")
    signal.notify("acme", delay_s=5)
    signal.notify("globex", delay_s=1)
    assert signal.wait("acme", mark, 0) is False  # not due yet
    clock.now += 5
    assert signal.wait("acme", mark, 60) is True  # due: look again
    assert signal.wait("acme", signal.mark("acme"), 0) is False  # the look after this mark sees it: forgotten
    assert signal.wait("globex", signal.mark("globex"), 0) is False


def test_close_ends_every_wait_now_and_later(make_signal: MakeSignal) -> None:
    signal = make_signal(FrozenClock())
    waiters = [in_thread(lambda org=org: signal.wait(org, signal.mark(org), 300)) for org in ("acme", "globex")]
    signal.close()
    for waiter, ended in waiters:
        waiter.join(JOIN_S)
        assert not waiter.is_alive() and ended == [False]
    assert signal.wait("acme", signal.mark("acme"), 300) is False  # any later wait returns at once


def test_every_notify_tells_the_observers_its_organization(make_signal: MakeSignal) -> None:
    heard: list[str] = []
    signal = make_signal(observers=[heard.append])  # given at construction: no list to append to later
    assert not hasattr(signal, "listeners")
    signal.notify("acme")
    signal.notify("globex", delay_s=30)
    assert heard == ["acme", "globex"]


def test_whether_a_wait_looks_again_without_a_notify(variant: str, make_signal: MakeSignal) -> None:
    """The one clause where the variants differ, by design. On AWS an enqueue may happen in another Lambda's
    process, which no notify here reports: a waiter must look again every `recheck_s` (True: look at the queue).
    In one process every enqueue notifies this object, so a look without a notify would be a wasted table query:
    that variant honours notify alone and its wait ends with False at the timeout."""
    signal = make_signal()
    mark = signal.mark("acme")
    if variant == "aws-polling":
        assert signal.wait("acme", mark, 300) is True  # ends at the recheck, long before the timeout
    else:
        assert signal.wait("acme", mark, LAMBDA_RECHECK_S * 2) is False
