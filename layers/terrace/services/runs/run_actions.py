"""A caller's reads of one run and their actions on it: apply (confirm), discard, cancel, force-cancel,
force-execute, and the end of a deleted workspace's runs. Mixed into `RunService` (`runs.py`), which creates runs
and whose constructor sets the stores below."""

from __future__ import annotations

import builtins
import functools
from collections.abc import Callable

from terrace.config import Settings
from terrace.domain import clock
from terrace.domain import runs as rs
from terrace.domain.errors import Conflict, NotFound
from terrace.domain.principal import Principal
from terrace.domain.runs import Run
from terrace.domain.task_stages import PRE_APPLY
from terrace.domain.workspace import Workspace
from terrace.services.access.authz import Action, Authorizer
from terrace.services.runs.scheduler import RunScheduler, queue_phase
from terrace.services.runs.store import RunStore, retrying
from terrace.services.workspaces.workspaces import WorkspaceService


def _cancel_started_phases(run: Run) -> None:
    for phase in (run.plan, run.apply):
        if not phase.final and phase.status != rs.P_PENDING:
            phase.mark(rs.P_CANCELED, clock.now_iso())


class RunActions:
    _store: RunStore
    _scheduler: RunScheduler
    _workspaces: WorkspaceService
    _settings: Settings

    # reads -------------------------------------------------------------------------------
    def get(self, principal: Principal, run_id: str, action: Action = Action.READ_RUNS, *, query: bool = False) -> Run:
        """A run the caller may read; a query run (`query`) is reached only as one (`query_runs.py`), never as a run."""
        run = self._store.load(run_id)
        try:
            if run.query != query:
                raise NotFound(f"run {run_id} not found")
            self._workspaces.get(principal, run.workspace_id, action)
            Authorizer.require_own_run(principal, run.id, f"run {run_id}")
        except NotFound as exc:
            raise NotFound(f"run {run_id} not found") from exc
        return run

    def list(self, principal: Principal, ws: Workspace) -> list[Run]:
        self._workspaces.authorize(principal, Action.READ_RUNS, ws)
        return self._store.list_for_workspace(ws.id)

    # actions -----------------------------------------------------------------------------
    def _act(self, principal: Principal, run_id: str, action: Action, *, query: bool = False) -> Run:
        run = self.get(principal, run_id, query=query)
        self._workspaces.authorize(principal, action, self._workspaces.load(run.workspace_id))
        return run

    def apply(self, principal: Principal, run_id: str) -> Run:
        self._act(principal, run_id, Action.APPLY_RUN)

        def step() -> Run:
            run = self._store.load(run_id)
            run.require(*rs.AWAITING_CONFIRMATION, action="apply (it is not awaiting confirmation)")
            if run.plan_only:
                raise Conflict(f"run {run_id} is plan-only and cannot be applied")
            run.confirmed_by = principal.username
            return self.confirm(run, run.version)

        return retrying(step)

    def confirm(self, run: Run, expected: int) -> Run:
        """Confirmed: the apply is queued, or the run waits in its pre-apply task stage."""
        previous = {run.id: run.status}
        now = clock.now_iso()
        run.transition(rs.CONFIRMED, now)
        held = self._scheduler.hold(run, PRE_APPLY, now)
        if not held:
            queue_phase(run, "apply", now)
        self._store.save([(run, expected)], None, previous)
        if not held:
            self._scheduler.enqueue(run, "apply")
        return run

    def discard(self, principal: Principal, run_id: str) -> Run:
        self._act(principal, run_id, Action.APPLY_RUN)

        def step() -> Run:
            run = self._store.load(run_id)
            run.require(*rs.DISCARDABLE, action="discard")
            return self._scheduler.finish(run, run.version, rs.DISCARDED)

        return retrying(step)

    def cancel(self, principal: Principal, run_id: str, *, query: bool = False) -> Run:
        self._act(principal, run_id, Action.CANCEL_RUN, query=query)
        return self._cancel(run_id)

    def cancel_checked(self, run_id: str) -> Run:
        """Cancel a run whose caller was checked (a module's test run: `module_test_runs.py`)."""
        return self._cancel(run_id)

    def cancel_superseded(self, workspace_id: str, superseded: Callable[[Run], bool]) -> builtins.list[Run]:
        """The speculative plans of a workspace that a newer push replaced (`superseded` decides: services/vcs/, the
        organization's speculative plan management), canceled as `cancel` does, by no caller."""
        canceled = []
        for run in self._store.list_for_workspace(workspace_id):
            if run.plan_only and not run.final and run.status in rs.CANCELABLE and superseded(run):
                canceled.append(self._cancel(run.id))
        return canceled

    def _cancel(self, run_id: str) -> Run:
        def step() -> Run:
            run = self._store.load(run_id)
            run.require(*rs.CANCELABLE, action="cancel")
            run.cancel_requested_at = run.cancel_requested_at or clock.epoch()  # force-cancel counts from here
            if run.status in rs.RUNNING:
                expected = run.version
                self._store.save([(run, expected)], None, {run.id: run.status})
                return run
            _cancel_started_phases(run)
            return self._scheduler.finish(run, run.version, rs.CANCELED)

        return retrying(step)

    def force_cancel(self, principal: Principal, run_id: str, *, query: bool = False) -> Run:
        self._act(principal, run_id, Action.CANCEL_RUN, query=query)
        return self.force_cancel_checked(run_id)

    def force_cancel_checked(self, run_id: str) -> Run:
        """Force-cancel a run whose caller was checked."""

        def step() -> Run:
            run = self._store.load(run_id)
            if not run.actions(self._settings.force_cancel_cooloff_s, clock.epoch())["is-force-cancelable"]:
                raise Conflict(
                    f"run {run_id} is not force-cancelable: cancel it first and wait "
                    f"{self._settings.force_cancel_cooloff_s} s"
                )
            run.force_cancel_requested = True
            _cancel_started_phases(run)
            return self._scheduler.finish(run, run.version, rs.FORCE_CANCELED)

        return retrying(step)

    def force_execute(self, principal: Principal, run_id: str) -> Run:
        """Start a pending run now: the runs ahead of it in its workspace's queue that await confirmation
        or are pending are discarded (HCP Terraform's force-execute); a run ahead that is still planning or
        applying is a conflict (cancel it first)."""
        self._act(principal, run_id, Action.APPLY_RUN)
        run = self._store.load(run_id)
        run.require(rs.PENDING, action="force-execute (it is not pending)")
        for ahead in reversed(self._store.list_for_workspace(run.workspace_id)):  # oldest first
            if ahead.id == run.id:
                break
            if ahead.final or ahead.plan_only:
                continue
            if ahead.status not in rs.DISCARDABLE:
                raise Conflict(f"run {ahead.id} ahead of {run_id} is {ahead.status}; cancel it first")
            retrying(functools.partial(self._end_now, ahead.id, rs.DISCARDED))
        self._scheduler.promote(run.workspace_id)
        return self._store.load(run_id)

    def end_for_deletion(self, principal: Principal, ws: Workspace, *, safe: bool) -> None:
        """Cancel every run of a workspace about to be deleted (HCP Terraform deletes a workspace whatever
        its runs do, and a user's lock too), newest first so no pending run is promoted; the head's run lock goes
        with it. Nothing is ended when a safe delete will be refused anyway (resources under management, or a
        user's lock)."""
        self._workspaces.authorize(principal, Action.DELETE_WORKSPACE, ws)
        user_locked = ws.lock is not None and not ws.lock.holder.startswith("run:")
        if safe and (ws.resource_count > 0 or user_locked):
            return
        for run in self._store.list_for_workspace(ws.id):  # newest first
            if not run.final:
                retrying(functools.partial(self._end_now, run.id, rs.CANCELED, "its workspace was deleted"))

    def _end_now(self, run_id: str, status: str, error: str | None = None) -> Run:
        """End a run that has not ended yet; the phases it started are canceled."""
        run = self._store.load(run_id)
        if run.final:
            return run
        _cancel_started_phases(run)
        return self._scheduler.finish(run, run.version, status, error)
