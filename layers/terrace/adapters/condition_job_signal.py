"""The job signal (`job_signal.JobSignal`) as a condition in the process: wakes runners that wait for their
organization's next job (the long-poll of `POST /api/runner/jobs/next`).

A waiting `JobService.next` takes a `mark` of its organization, looks at the queue, and — finding nothing —
waits until the mark is passed: a job of that organization was enqueued (`notify`), a delayed job of it came
due, or its deadline came. The mark is taken before the look, so an enqueue between the look and the wait
is never missed.

The embedded server, `make dev` (moto or embedded) and the in-memory container are one process: every enqueue
and every waiter meet in this object's condition, so a waiting runner is woken at once and uses no CPU while
it waits. On AWS the API is Lambda: the enqueue may happen in another execution environment, so a waiter
also looks again every `recheck_s` (one table query each time; the Fargate runners do not long-poll at all,
they ask every few seconds, see `infra/runner.py`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

LAMBDA_RECHECK_S = 1.0  # on AWS a waiting `next` looks again this often (another Lambda may have enqueued)


class ConditionJobSignal:
    """The job signal (`job_signal.JobSignal`) as a condition in this process; `recheck_s` set: the AWS variant.
    `observers` are told the organization of every enqueue (the composition root gives the scaler's wake-up:
    the local scaler loop ticks at once); they are fixed at construction."""

    def __init__(
        self,
        recheck_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        observers: Sequence[Callable[[str], object]] = (),
    ) -> None:
        self.recheck_s = recheck_s  # None: trust notify alone (one process)
        self._clock = clock
        self._changed = threading.Condition()
        self._marks: dict[str, int] = {}
        self._due: dict[str, list[float]] = {}  # when delayed jobs of an organization become available
        self._observers = tuple(observers)
        self._closed = False

    def mark(self, organization: str) -> int:
        """The organization's position now; jobs delayed until now are visible to the look that follows."""
        with self._changed:
            self._prune(organization, self._clock())
            return self._marks.get(organization, 0)

    def notify(self, organization: str, delay_s: float = 0) -> None:
        """A job of `organization` was enqueued, available after `delay_s`."""
        with self._changed:
            if delay_s > 0:
                self._due.setdefault(organization, []).append(self._clock() + delay_s)
            else:
                self._marks[organization] = self._marks.get(organization, 0) + 1
            self._changed.notify_all()
        for observer in self._observers:
            observer(organization)

    def close(self) -> None:
        """The server stops: every wait ends now with nothing new (its runner gets a 204 and goes)."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def wait(self, organization: str, mark: int, timeout_s: float) -> bool:
        """Block until something may be new for `organization` since `mark` (True: look again) or until
        `timeout_s` passed with nothing new (False)."""
        with self._changed:
            now = self._clock()
            end = now + max(0.0, timeout_s)
            recheck_at = now + self.recheck_s if self.recheck_s is not None else end
            while self._marks.get(organization, 0) == mark:
                if self._closed:
                    return False
                now = self._clock()
                due = min(self._due.get(organization) or [end])
                if due <= now and due < end:
                    return True  # a delayed job came due
                if now >= end:
                    return False
                if now >= recheck_at:
                    return True
                self._changed.wait(min(end, due, recheck_at) - now)
            return True

    def _prune(self, organization: str, now: float) -> None:
        due = [t for t in self._due.get(organization, ()) if t > now]
        if due:
            self._due[organization] = due
        else:
            self._due.pop(organization, None)
