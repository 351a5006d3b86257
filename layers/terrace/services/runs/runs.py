"""Runs: creation and the user actions (apply, discard, cancel, force-cancel)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from terrace.adapters.held_reads import held_reads
from terrace.config import Settings
from terrace.domain import agent_pools, clock, cost_estimation, limits
from terrace.domain import runs as rs
from terrace.domain.auto_destroy import SOURCE as AUTO_DESTROY_SOURCE
from terrace.domain.configuration_versions import UPLOADED, ConfigurationVersion
from terrace.domain.errors import Conflict, Forbidden, Invalid, NotFound
from terrace.domain.ids import new_id
from terrace.domain.principal import Principal
from terrace.domain.run_timing import API, CONFIGURATION_VERSION
from terrace.domain.run_triggers import RUN_SOURCE, Origin, triggered_run_id
from terrace.domain.runs import PhaseState, Run
from terrace.domain.task_stages import PRE_APPLY
from terrace.domain.workspace import Workspace
from terrace.services.access.authz import Action, Authorizer, run_action
from terrace.services.access.organizations import OrganizationService
from terrace.services.optimistic import optimistic
from terrace.services.runs import run_attributes
from terrace.services.runs.configuration_versions import ConfigurationVersionService
from terrace.services.runs.scheduler import RunScheduler, queue_phase
from terrace.services.runs.store import RunStore, triggered_event
from terrace.services.workspaces.workspaces import WorkspaceService

T = TypeVar("T")


def retrying(step: Callable[[], T], attempts: int = 8) -> T:
    """Run a load-decide-write step on runs again when its conditional write loses a race (runners' reports race
    users' actions: a short growing pause between attempts)."""
    return optimistic(step, attempts=attempts, backoff_s=0.01, exhausted="the run changed concurrently; retry")


def _cancel_started_phases(run: Run) -> None:
    for phase in (run.plan, run.apply):
        if not phase.final and phase.status != rs.P_PENDING:
            phase.mark(rs.P_CANCELED, clock.now_iso())


class RunService:
    def __init__(
        self,
        store: RunStore,
        scheduler: RunScheduler,
        workspaces: WorkspaceService,
        configuration_versions: ConfigurationVersionService,
        settings: Settings,
        *,
        organizations: OrganizationService,
    ) -> None:
        self._organizations = organizations
        self._store = store
        self._scheduler = scheduler
        self._workspaces = workspaces
        self._cvs = configuration_versions
        self._settings = settings
        # a run's terraform-version -> (the exact version it runs with, or why no runner can run it)
        # (bootstrap: ToolVersionService.resolve; unset, the runner decides)
        self.resolve_version: Callable[[str], tuple[str, str | None]] = lambda requested: (requested, None)
        # the variables a new run records: its workspace's, its variable sets' and its own, after precedence
        # (bootstrap: EffectiveVariables.resolve_for_run; unset, the run records none and its job spec reads
        # the workspace's variables when it runs)
        self.resolve_variables: Callable[[Workspace, list[dict[str, str]]], list[dict[str, Any]] | None] = (
            lambda ws, run_variables: None
        )

    # reads -------------------------------------------------------------------------------
    def get(self, principal: Principal, run_id: str, action: Action = Action.READ_RUNS) -> Run:
        run = self._store.load(run_id)
        try:
            self._workspaces.get(principal, run.workspace_id, action)
            Authorizer.require_own_run(principal, run.id, f"run {run_id}")
        except NotFound as exc:
            raise NotFound(f"run {run_id} not found") from exc
        return run

    def list(self, principal: Principal, ws: Workspace) -> list[Run]:
        self._workspaces.authorize(principal, Action.READ_RUNS, ws)
        return self._store.list_for_workspace(ws.id)

    # create ------------------------------------------------------------------------------
    def create(
        self, principal: Principal, ws: Workspace, attrs: dict[str, Any], cv_id: str | None, source: str = API
    ) -> Run:
        """A run of `cv_id` (else the latest uploaded version); `source` says where it came from (`run_timing`)."""
        with held_reads():  # the workspace, version, run tasks and policy sets are read once for all its steps
            return self._create_checked(principal, ws, attrs, cv_id, source)

    def _create_checked(
        self, principal: Principal, ws: Workspace, attrs: dict[str, Any], cv_id: str | None, source: str
    ) -> Run:
        self._workspaces.authorize(principal, Action.QUEUE_RUN, ws)
        self._require_remote_execution(ws)  # before any write: a refused run leaves nothing behind
        # a write: a version whose archive is there but whose landing event is not handled yet is finalized here
        cv = (
            self._cvs.finalize(self._cvs.get(principal, cv_id))
            if cv_id
            else self._cvs.latest_uploaded(ws, finalize=True)
        )
        if cv is None:
            raise Invalid(
                "the workspace has no uploaded configuration version; upload one first",
                pointer="/data/relationships/configuration-version",
            )
        if cv.workspace_id != ws.id:
            raise NotFound(f"configuration version {cv.id} not found")
        if cv.status != UPLOADED:
            raise Invalid(
                f"configuration version {cv.id} is {cv.status}, not uploaded",
                pointer="/data/relationships/configuration-version",
            )
        may_apply = self._workspaces.can(principal, Action.APPLY_RUN, ws)
        return self._create(ws, attrs, cv, principal.username, may_apply, source=source)

    def queue_for_upload(self, cv: ConfigurationVersion) -> Run | None:
        """auto-queue-runs: a configuration version's upload queues a run (its creator could queue runs; the
        workspace's auto-apply applies it only if they could apply, as decided when the version was created)."""
        if not cv.auto_queue_runs or cv.provisional:
            return None
        ws = self._workspaces.load(cv.workspace_id)
        if self._workspaces.execution_mode(ws) == "local":  # the upload stands; the server runs nothing of it
            return None
        return self._create(ws, {}, cv, cv.created_by, cv.may_apply, source=CONFIGURATION_VERSION)

    def _require_remote_execution(self, ws: Workspace) -> None:
        """A workspace in the `local` execution mode keeps only state: its plans and applies run on the machine of
        whoever runs terraform, and the server's runners run none of them."""
        if self._workspaces.execution_mode(ws) == "local":
            raise Conflict(
                f"workspace {ws.name} uses the local execution mode: its runs execute where terraform is run, not on"
                " this server. Change its execution mode to remote to queue runs here."
            )

    def _agent_pool(self, ws: Workspace) -> str | None:
        """The agent pool a new run of `ws` waits for (None: Terrace's runners execute it)."""
        org = self._organizations.by_key(ws.organization)
        if ws.effective_execution_mode(org.default_execution_mode) != "agent":
            return None
        pool = agent_pools.pool_of(ws, org)
        if pool is None:
            raise Conflict(
                f"workspace {ws.name} uses the agent execution mode without an agent pool: choose one in its settings"
                " (or the organization's default) to queue runs"
            )
        return pool

    def queue_triggered(self, ws: Workspace, cv: ConfigurationVersion, origin: Origin, created_by: str) -> Run:
        """A run queued by a run trigger (`workflows/run_trigger_fanout.py`), auto-applied by `auto-apply-run-trigger`;
        its id derives from the source run and `ws`: queued twice, the run's write raises `ConditionFailed`."""
        message = f"Triggered by run {origin.source_run_id} of workspace {origin.source_workspace_name}"
        attrs = {"message": message, "auto-apply": ws.auto_apply_run_trigger, "plan-only": False}
        trigger = (triggered_run_id(origin.source_run_id, ws.id), origin.to_dict())
        return self._create(ws, attrs, cv, created_by, True, trigger=trigger)

    def queue_auto_destroy(self, ws: Workspace, cv: ConfigurationVersion, run_id: str, due_at: str) -> Run:
        """The destroy run of an ephemeral workspace that came due (`workflows/auto_destroy.py`), applied without
        confirmation as HCP's auto-destroy runs are; queued twice (same `run_id`), its write raises
        `ConditionFailed`."""
        attrs = {
            "message": f"Triggered by auto-destroy (due at {due_at})",
            "is-destroy": True,
            "auto-apply": True,
            "plan-only": False,
        }
        return self._create(ws, attrs, cv, "", True, source=AUTO_DESTROY_SOURCE, run_id=run_id)

    def _create(
        self,
        ws: Workspace,
        attrs: dict[str, Any],
        cv: ConfigurationVersion,
        created_by: str,
        may_apply: bool,
        *,
        trigger: tuple[str, dict[str, Any]] | None = None,
        source: str = API,
        run_id: str | None = None,
    ) -> Run:
        plan_only = run_attributes.boolean(attrs, "plan-only", cv.speculative)
        is_destroy = run_attributes.boolean(attrs, "is-destroy", False)
        refresh_only = run_attributes.boolean(attrs, "refresh-only", False)
        if is_destroy and refresh_only:
            raise Invalid("a run cannot be both destroy and refresh-only", pointer="/data/attributes/refresh-only")
        if is_destroy and not ws.allow_destroy_plan:
            raise Invalid("the workspace does not allow destroy plans", pointer="/data/attributes/is-destroy")
        message = attrs.get("message") or "Queued manually via the Terraform Enterprise API"
        message = limits.text(message, "message", limits.RUN_MESSAGE_MAX)
        version = attrs.get("terraform-version") or ws.terraform_version
        if not isinstance(version, str) or len(version) > 64:
            raise Invalid("terraform-version must be a string", pointer="/data/attributes/terraform-version")
        version, problem = self.resolve_version(version)
        suffix = (trigger[0] if trigger else run_id or new_id("run")).split("-", 1)[1]
        now = clock.now_iso()
        run = Run(
            id=f"run-{suffix}",
            organization=ws.organization,
            workspace_id=ws.id,
            configuration_version_id=cv.id,
            created_at=now,
            created_by=created_by,
            message=message,
            is_destroy=is_destroy,
            refresh=run_attributes.boolean(attrs, "refresh", True),
            refresh_only=refresh_only,
            target_addrs=run_attributes.addresses(attrs, "target-addrs"),
            replace_addrs=run_attributes.addresses(attrs, "replace-addrs"),
            # the workspace's auto-apply applies the runs of those who may apply; the others' runs wait
            auto_apply=run_attributes.boolean(attrs, "auto-apply", ws.auto_apply and may_apply),
            plan_only=plan_only,
            save_plan=run_attributes.boolean(attrs, "save-plan", False),
            allow_empty_apply=run_attributes.boolean(attrs, "allow-empty-apply", False),
            terraform_version=version,
            variables=run_attributes.variables(attrs),
            plan=PhaseState(id=f"plan-{suffix}"),
            apply=PhaseState(id=f"apply-{suffix}"),
            source=RUN_SOURCE if trigger else source,
            trigger=trigger[1] if trigger else None,
        )
        if run_action(plan_only=plan_only, save_plan=run.save_plan, auto_apply=run.auto_apply) is Action.APPLY_RUN:
            if not may_apply:
                raise Forbidden(
                    "a run that applies without confirmation (auto-apply) needs permission to apply runs "
                    f"in workspace {ws.id}"
                )
        run.agent_pool_id = self._agent_pool(ws)
        run.resolved_variables = self.resolve_variables(ws, run.variables)  # once: a run keeps what it was given
        self._cvs.seal(cv)  # the archive this run plans is final from here
        run.transition(rs.PENDING, now)
        run.status_timestamps["plan-queueable-at"] = now
        if self._organizations.by_key(ws.organization).cost_estimation_enabled:
            run.cost_estimate = cost_estimation.for_run(run.id, now)
        run.plan.mark(rs.P_PENDING, now)
        run.apply.mark(rs.P_PENDING, now)
        if self._scheduler.stages is not None:
            self._scheduler.stages.prepare(run)  # the task stages its participants prepare (none: nothing written)
        speculative = plan_only and self._scheduler.start_plan(run, now)  # speculative runs never wait in the queue
        # one write: the run, its workspace's change and, at the head of a free workspace, its plan started
        run, started, queued = self._scheduler.admit(
            run, triggered_event(run, now), may_start=not plan_only and not problem
        )
        if problem:  # errored at once, not after a runner's timeout
            created = self._store.load(run.id)
            return self._scheduler.finish(created, created.version, rs.ERRORED, problem)
        if queued or speculative:
            self._scheduler.enqueue(run, "plan")
        elif not plan_only and not started:
            self._scheduler.promote(ws.id)  # an older run waits, or the workspace is held: the queue decides
        return self._store.load(run.id)

    # actions -----------------------------------------------------------------------------
    def _act(self, principal: Principal, run_id: str, action: Action) -> Run:
        run = self.get(principal, run_id)
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

    def cancel(self, principal: Principal, run_id: str) -> Run:
        self._act(principal, run_id, Action.CANCEL_RUN)

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

    def force_cancel(self, principal: Principal, run_id: str) -> Run:
        self._act(principal, run_id, Action.CANCEL_RUN)

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
