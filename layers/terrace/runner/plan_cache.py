"""Finished plans' working folders a runner keeps for the same run's apply (no second download, extract, init).

A plan's folder (configuration, `.terraform` with its providers and lock file, the plan file) is kept only
when its run may go on to apply: not speculative, finished with a plan file. It is handed back to the runner
(closed to every job uid, `JobFolder.hold`: the next job may get the same uid) the moment its plan job ends, and
dropped when the apply takes it, when the API says the run will not apply on it (discarded, canceled,
planned and finished, applied by another runner), when it is older than `max_age_s`, when more than
`max_entries` are held (oldest first), and when the runner exits. The plan file on the server stays the
source of truth: the apply reuses a folder only when the plan it holds is byte-identical to the stored one
(`execution.py`).
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from terrace.runner.job_folder import JobFolder

log = logging.getLogger("terrace.runner.plan_cache")
MAX_ENTRIES = 4
MAX_AGE_S = 15 * 60.0


@dataclass
class HeldPlan:
    run_id: str
    folder: JobFolder
    cwd: Path  # the configuration's working directory inside the folder
    plan_file: Path  # the runner's copy of the plan, in the folder
    held_at: float

    def remove(self) -> None:
        self.folder.remove()


class PlanCache:
    def __init__(
        self,
        max_entries: int = MAX_ENTRIES,
        max_age_s: float = MAX_AGE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_entries, self.max_age_s, self._clock = max_entries, max_age_s, clock
        self._held: OrderedDict[str, HeldPlan] = OrderedDict()

    def __len__(self) -> int:
        return len(self._held)

    def run_ids(self) -> list[str]:
        return list(self._held)

    def holds(self, run_id: str) -> bool:
        """Whether the run's plan folder is held (as `run_ids`: without expiring anything first)."""
        return run_id in self._held

    def hold(self, run_id: str, folder: JobFolder, cwd: Path, plan_file: Path) -> None:
        """Keeps a plan's folder (replacing an older one of the same run), then enforces the bounds."""
        self.drop(run_id)
        self._held[run_id] = HeldPlan(run_id, folder, cwd, plan_file, self._clock())
        self.expire()

    def take(self, run_id: str) -> HeldPlan | None:
        """The run's folder, now the caller's (it removes it); None when not held or too old."""
        self.expire()
        return self._held.pop(run_id, None)

    def drop(self, run_id: str) -> None:
        held = self._held.pop(run_id, None)
        if held is not None:
            held.remove()

    def keep_only(self, run_ids: set[str]) -> None:
        """Drops every folder whose run is not in `run_ids` (the API's answer of which may still apply)."""
        for run_id in [r for r in self._held if r not in run_ids]:
            log.info("dropping the held plan folder of run %s: it will not be applied here", run_id)
            self.drop(run_id)

    def expire(self) -> None:
        now = self._clock()
        for run_id, held in list(self._held.items()):
            if now - held.held_at > self.max_age_s:
                log.info("dropping the held plan folder of run %s: older than %.0f s", run_id, self.max_age_s)
                self.drop(run_id)
        while len(self._held) > self.max_entries:
            run_id = next(iter(self._held))
            log.info("dropping the held plan folder of run %s: more than %d held", run_id, self.max_entries)
            self.drop(run_id)

    def clear(self) -> None:
        for run_id in list(self._held):
            self.drop(run_id)
