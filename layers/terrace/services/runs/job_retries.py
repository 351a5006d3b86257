"""Lost job attempts (called by the reaper). A missed heartbeat is an infrastructure failure: the phase is
retried with exponential back-off, at most `job_max_attempts` times, then the run is errored with a clear
message; an apply that had started applying is never retried (it would create resources again), nor a module's
test run (`domain/module_tests.py`: its tests create and destroy real resources)."""

from __future__ import annotations

import logging
from collections.abc import Collection

from terrace.config import Settings
from terrace.domain import clock
from terrace.domain import runs as rs
from terrace.domain.runs import Run
from terrace.services.runs.logs import LogService
from terrace.services.runs.scheduler import RunScheduler
from terrace.services.runs.store import RunStore, retrying

log = logging.getLogger("terrace.jobs")


class JobRetries:
    def __init__(self, store: RunStore, scheduler: RunScheduler, logs: LogService, settings: Settings) -> None:
        self._store, self._scheduler, self._logs, self._settings = store, scheduler, logs, settings

    def retry_or_fail(self, run: Run, name: str, reason: str) -> Run:
        """Retry a lost attempt, unless it may have changed something: a plan changes nothing and an apply lost
        before terraform started applying neither; an apply lost after that ends the run `errored`."""
        expected, state = run.version, run.phase(name)
        if run.final or state.status != rs.P_RUNNING:
            return run  # finished, canceled or already retried meanwhile
        if name == "apply" and state.apply_started_at is not None:
            return self._interrupted(run, expected, reason)
        if run.test:  # its tests may have created resources: run again, they would create them again
            return self._interrupted(run, expected, reason, "plan")
        if state.attempt >= self._settings.job_max_attempts:
            state.mark(rs.P_ERRORED, clock.now_iso())
            return self._scheduler.finish(
                run,
                expected,
                rs.ERRORED,
                f"the {name} failed {state.attempt} times because of infrastructure problems ({reason}); giving up",
            )
        previous, now = {run.id: run.status}, clock.now_iso()
        state.attempt += 1
        state.mark(rs.P_QUEUED, now)
        state.runner_id, state.heartbeat_at, state.queued_at = None, None, now
        run.transition(rs.PLAN_QUEUED if name == "plan" else rs.APPLY_QUEUED, now)
        self._store.save([(run, expected)], None, previous)
        self._scheduler.revoke_tokens(run)  # the lost attempt's token dies; the next claim issues a new one
        self._logs.note(
            state.id,
            state.attempt,
            f"\n--- Terrace: {reason}; retrying ({state.attempt} of {self._settings.job_max_attempts}) ---\n",
        )
        delay = min(900, self._settings.job_retry_base_s * 2 ** (state.attempt - 2))
        self._scheduler.enqueue(run, name, delay_s=delay)
        log.warning("retrying %s of %s (attempt %d): %s", name, run.id, state.attempt, reason)
        return run

    def lose_claimed_with(self, pool_id: str, token_ids: Collection[str]) -> int:
        """The jobs of `pool_id` its agents claimed with the revoked `token_ids`: their attempts are lost now, not at
        a missed heartbeat, so their run tokens die with the agent token (a plan is queued again for another agent;
        an apply already applying ends errored). Returns how many."""
        lost = 0
        for entry in self._store.open_runs():
            if entry.get("agent_pool_id") != pool_id or not token_ids:
                continue

            def step(run_id: str = entry["run_id"]) -> int:
                run = self._store.load(run_id)
                for name in ("plan", "apply"):
                    state = run.phase(name)
                    if state.status == rs.P_RUNNING and (state.runner_id or "").rsplit("@", 1)[-1] in token_ids:
                        self.retry_or_fail(run, name, "the token of the agent running it was revoked")
                        return 1
                return 0

            lost += retrying(step)
        return lost

    def _interrupted(self, run: Run, expected: int, reason: str, name: str = "apply") -> Run:
        """An apply lost mid-way, or a test run: not retried (it would create resources again); the state versions
        its terraform wrote stay; the run ends errored through the normal finish path (workspace lock released,
        tokens revoked)."""
        state, now = run.phase(name), clock.now_iso()
        message = (
            f"the test run was interrupted ({reason}); it is not retried: resources its tests created may remain"
            if run.test
            else f"the apply was interrupted ({reason}) after terraform had started applying; it is not retried: "
            "state may be incomplete; check it before running again"
        )
        self._logs.closing_note(state.id, state.attempt, f"\n--- Terrace: {message} ---\n")
        self._logs.archive(state.id)
        state.log_archived = True
        state.mark(rs.P_ERRORED, now)
        state.finished_at = now
        finished = self._scheduler.finish(run, expected, rs.ERRORED, message)
        self._logs.purge(state.id)
        log.warning("%s of %s interrupted: %s; not retried", name, run.id, reason)
        return finished
