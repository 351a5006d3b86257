"""The reaper: nothing is left in a non-final state forever.

Every tick (a Lambda schedule on AWS, a timer locally) it walks the open runs and
- promotes pending runs whose workspace head is free (a stuck workspace queue),
- re-indexes queued jobs missing from their organization's queue (and sends their lane message again), and errors
  jobs nobody claimed in time: the queued deadline counts from when the phase was queued or, if later, from when
  the dispatcher last had to leave phases waiting for want of room (`RunnerSlots.saturated_at`), so it follows the
  backlog of a burst instead of failing the runs that merely waited behind it,
- retries phases whose runner stopped heartbeating (or cancels them if a cancel was asked),
- errors phases past their deadline and discards plans left unconfirmed (or awaiting an override) too long,
- looks again at runs waiting in a task stage (`stage_progress.py`: participants report what outlived its limit),
and, at most hourly, runs the data retention sweep it is given (`services/workflows/retention_sweep.py`, a
workflow above the runs area: this module knows it only as a `Sweep`), and each tick the other sweeps it is
given (the auto-destroy sweep of ephemeral workspaces, `services/workflows/auto_destroy.py`; the health
assessment schedule's, `assessments.py`: one query, empty while no workspace has assessments on; the audit
trail's daily export, `services/audit/export.py`: one read while not due).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime
from typing import Any, Protocol

from terrace.config import Settings
from terrace.domain import clock
from terrace.domain import runs as rs
from terrace.domain.runs import Run
from terrace.domain.task_stages import stage_id
from terrace.services.runs.job_retries import JobRetries
from terrace.services.runs.runner_slots import RunnerSlots
from terrace.services.runs.scheduler import RunScheduler
from terrace.services.runs.store import RunStore, retrying

log = logging.getLogger("terrace.reaper")


class StageCheck(Protocol):
    """Looks again at a run waiting in a task stage (`stage_progress.py`: its participants' verdicts, time limits)."""

    def advance(self, stage_id: str) -> object: ...


class Sweep(Protocol):
    """A periodic sweep the reaper runs each tick; it decides itself whether it is due (None: not run)."""

    def sweep_if_due(self) -> dict[str, int] | None: ...


def _age(iso_time: str | None, now: float) -> float:
    if not iso_time:
        return 0.0
    return now - datetime.fromisoformat(iso_time.replace("Z", "+00:00")).timestamp()


class Reaper:
    def __init__(
        self,
        store: RunStore,
        scheduler: RunScheduler,
        retries: JobRetries,
        settings: Settings,
        retention: Sweep | None = None,
        stages: StageCheck | None = None,
        slots: RunnerSlots | None = None,
        sweeps: tuple[Sweep, ...] = (),
        phase_timeout: Callable[[str], int | None] = lambda _phase: None,
        coalesce_wakes: Callable[[], AbstractContextManager[None]] = nullcontext,
    ) -> None:
        self._phase_timeout = phase_timeout  # the site admin's plan-timeout / apply-timeout (admin/general-settings)
        # the pass's resends wake the dispatcher once, after the last (`adapters/kicking_lanes.py` on AWS)
        self._coalesce_wakes = coalesce_wakes
        self._store, self._scheduler, self._retries, self._settings = store, scheduler, retries, settings
        self._stages, self._slots = stages, slots
        self._sweeps = (retention, *sweeps) if retention is not None else sweeps  # data retention first
        self._saturated_at: float | None = None  # read once per tick, when a queued phase is past its deadline

    def reap_once(self) -> dict[str, Any]:
        summary = {"checked": 0, "promoted": 0, "resent": 0, "retried": 0, "errored": 0, "discarded": 0, "staged": 0}
        seen_workspaces: set[str] = set()
        self._saturated_at = None
        with self._coalesce_wakes():
            for entry in self._store.open_runs():
                summary["checked"] += 1
                try:
                    outcome = self._check(entry["run_id"], entry["workspace_id"], seen_workspaces)
                except Exception:
                    log.exception("reaper could not check run %s", entry.get("run_id"))
                    continue
                if outcome:
                    summary[outcome] += 1
        for sweep in self._sweeps:  # each decides itself whether it is due (retention hourly; the others one query)
            try:
                done = sweep.sweep_if_due()
            except Exception:
                log.exception("the sweep %s failed", type(sweep).__name__)
            else:
                if done:
                    log.info("%s: %s", type(sweep).__name__, done)
        return summary

    def _check(self, run_id: str, workspace_id: str, seen_workspaces: set[str]) -> str | None:
        run = self._store.load(run_id)
        now, s = clock.epoch(), self._settings
        if run.status == rs.PENDING:
            if workspace_id not in seen_workspaces:
                seen_workspaces.add(workspace_id)
                if self._scheduler.promote(workspace_id) is not None:
                    return "promoted"
            return None
        if run.status in rs.QUEUED:
            name = "plan" if run.status == rs.PLAN_QUEUED else "apply"
            state = run.phase(name)
            # a run of an agent pool waits for one of its agents as long as it takes (as in HCP Terraform)
            if (
                not run.agent_pool_id
                and _age(state.queued_at, now) > s.queued_deadline_s
                and now - self._saturated() > s.queued_deadline_s
            ):
                self._fail(run, rs.ERRORED, f"no runner claimed the {name} within {s.queued_deadline_s} s")
                return "errored"
            sent = state.timestamps.get("resent-at") or state.queued_at
            if _age(sent, now) > s.queued_resend_s:
                self._resend(run, name)
                return "resent"
            return None
        if run.status in rs.RUNNING:
            name = "plan" if run.status == rs.PLANNING else "apply"
            state = run.phase(name)
            admin_limit = self._phase_timeout(name)
            deadline = min(s.phase_deadline_s, admin_limit) if admin_limit else s.phase_deadline_s
            if _age(state.started_at, now) > deadline:
                self._fail(run, rs.ERRORED, f"the {name} ran longer than {deadline} s")
                return "errored"
            if state.heartbeat_at is not None and now - state.heartbeat_at > s.job_heartbeat_timeout_s:
                if run.cancel_requested_at is not None:
                    self._fail(run, rs.CANCELED, None)
                    return "errored"
                retrying(
                    lambda: self._retries.retry_or_fail(
                        self._store.load(run_id), name, "the runner stopped sending heartbeats"
                    )
                )
                return "retried"
            return None
        for name, running in rs.STAGE_RUNNING.items():
            if run.status == running and self._stages is not None:
                self._stages.advance(stage_id(run.id, name))  # a lost event, or a participant's time limit
                return "staged"
        if run.status in rs.AWAITING_CONFIRMATION or run.status == rs.POST_PLAN_AWAITING_DECISION:
            done_at = run.plan.finished_at
            if _age(done_at, now) > s.confirm_deadline_s:
                self._fail(run, rs.DISCARDED, None)
                return "discarded"
        return None

    def _saturated(self) -> float:
        """When the dispatcher last left phases waiting for want of room (0: never, or no dispatcher)."""
        if self._saturated_at is None:
            self._saturated_at = float(self._slots.saturated_at()) if self._slots is not None else 0.0
        return self._saturated_at

    def _fail(self, run: Run, status: str, error: str | None) -> None:
        def step() -> Run:
            current = self._store.load(run.id)
            if current.final:
                return current
            return self._scheduler.finish(current, current.version, status, error)

        retrying(step)

    def _resend(self, run: Run, name: str) -> None:
        def step() -> Run:
            current = self._store.load(run.id)
            state = current.phase(name)
            if state.status != rs.P_QUEUED:
                return current
            expected = current.version
            state.timestamps["resent-at"] = clock.now_iso()
            self._store.save([(current, expected)], None, {current.id: current.status})
            if self._scheduler.ensure_queued(current, name):
                log.warning("re-indexed the lost %s job of %s", name, current.id)
            return current

        retrying(step)
