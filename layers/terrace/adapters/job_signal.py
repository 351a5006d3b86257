"""The job signal port: wakes runners that wait for their organization's next job (the long-poll of
`POST /api/runner/jobs/next`).

A waiter takes a `mark` of its organization, looks at the queue, and — finding nothing — `wait`s until something
may be new for that organization since the mark (`notify`: a job of it was enqueued, or a delayed one came due),
until its timeout, or until `close`. The mark is taken before the look, so an enqueue between the look and the wait
is never missed. Implementation: `condition_job_signal.py` (in the process; on AWS it also looks again every
`recheck_s`); `tests/contract/test_job_signal_contract.py` is the contract. Whoever else must hear of every
enqueue (the local scaler's wake-up) is given to the implementation at construction (its `observers`).
"""

from __future__ import annotations

from typing import Protocol


class JobSignal(Protocol):
    def mark(self, organization: str) -> int:
        """The organization's position now; jobs delayed until now are visible to the look that follows."""
        ...

    def notify(self, organization: str, delay_s: float = 0) -> None:
        """A job of `organization` was enqueued, available after `delay_s`."""
        ...

    def wait(self, organization: str, mark: int, timeout_s: float) -> bool:
        """Block until something may be new for `organization` since `mark` (True: look again) or until
        `timeout_s` passed with nothing new (False)."""
        ...

    def close(self) -> None:
        """The server stops: every wait ends now with nothing new."""
        ...
