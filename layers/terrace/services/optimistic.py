"""The one optimistic-update loop: every state change is a conditional write (on a `version` attribute, or
`if_absent`), and a writer that loses re-reads and re-decides.

`step` reads what it needs, decides (it may return early, or raise a domain error to refuse) and writes
conditionally; the table's `ConditionFailed` means someone changed what was read, so `step` runs again, at most
`attempts` times in all. When every attempt lost, `exhausted` decides: a message is raised as a 409 `Conflict`,
a callable gives the answer instead (for writers whose work another writer may have done for them).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from terrace.adapters.table import ConditionFailed
from terrace.domain.errors import Conflict

T = TypeVar("T")

ATTEMPTS = 8


def optimistic(
    step: Callable[[], T],
    *,
    exhausted: str | Callable[[], T],
    attempts: int = ATTEMPTS,
    backoff_s: float = 0.0,
) -> T:
    """`step()` again while its conditional write loses (sleeping `backoff_s` × the attempt number between
    attempts, if given); `exhausted` once `attempts` have lost."""
    for attempt in range(attempts):
        try:
            return step()
        except ConditionFailed:
            if backoff_s:
                time.sleep(backoff_s * (attempt + 1))
    if isinstance(exhausted, str):
        raise Conflict(exhausted)
    return exhausted()
