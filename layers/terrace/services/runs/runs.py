"""Runs: their creation (through the API, a configuration version's upload, a run trigger, an auto-destroy); the
reads and the user's actions on a run are `run_actions.py`'s, mixed in."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from terrace.config import Settings
from terrace.domain import clock, cost_estimation, limits, tool_versions, vcs_events
from terrace.domain import runs as rs
from terrace.domain.auto_destroy import SOURCE as AUTO_DESTROY_SOURCE
from terrace.domain.configuration_versions import UPLOADED, ConfigurationVersion
from terrace.domain.errors import Conflict, Forbidden, Invalid, NotFound
from terrace.domain.ids import new_id
from terrace.domain.principal import Principal
from terrace.domain.run_timing import API, CONFIGURATION_VERSION
from terrace.domain.run_triggers import RUN_SOURCE, Origin, triggered_run_id
from terrace.domain.runs import PhaseState, Run
from terrace.domain.workspace import Workspace
from terrace.services.access.authz import Action, run_action
from terrace.services.access.organizations import OrganizationService
from terrace.services.runs import run_attributes
from terrace.services.runs.configuration_versions import ConfigurationVersionService
from terrace.services.runs.run_actions import RunActions
from terrace.services.runs.scheduler import RunScheduler
from terrace.services.runs.store import RunStore, triggered_event
from terrace.services.runs.store_logs import HEAD
from terrace.services.unit_of_work import unit_of_work
from terrace.services.workspaces.workspaces import WorkspaceService

# the ports the composition root fills: the admin area's tool versions, the workspaces area's effective variables
VersionResolver = Callable[[str, str], tuple[str, str, str | None]]
RunVariablesResolver = Callable[[Workspace, list[dict[str, str]]], list[dict[str, Any]] | None]


class RunService(RunActions):
    def __init__(
        self,
        store: RunStore,
        scheduler: RunScheduler,
        workspaces: WorkspaceService,
        configuration_versions: ConfigurationVersionService,
        settings: Settings,
        *,
        organizations: OrganizationService,
        resolve_version: VersionResolver,
        resolve_variables: RunVariablesResolver,
        cost_estimation_on: Callable[[], bool] = lambda: True,
    ) -> None:
        self._cost_estimation_on = cost_estimation_on  # the site admin's switch (admin/cost-estimation-settings)
        self._organizations = organizations
        self._store = store
        self._scheduler = scheduler
        self._workspaces = workspaces
        self._cvs = configuration_versions
        self._settings = settings
        # a run's terraform-version and its workspace's tool -> (the exact version it runs with, its tool, or why
        # no runner can run it) (ToolVersionService.resolve)
        self.resolve_version = resolve_version
        # the variables a new run records: its workspace's, its variable sets' and its own, after precedence
        # (EffectiveVariables.resolve_for_run; None: the run records none and its job spec reads the
        # workspace's variables when it runs)
        self.resolve_variables = resolve_variables

    # create ------------------------------------------------------------------------------
    def create(
        self, principal: Principal, ws: Workspace, attrs: dict[str, Any], cv_id: str | None, source: str = API
    ) -> Run:
        """A run of `cv_id` (else the latest uploaded version); `source` says where it came from (`run_timing`)."""
        with unit_of_work():  # the workspace, version, run tasks and policy sets are read once for all its steps
            return self._create_checked(principal, ws, attrs, cv_id, source)

    def create_for(
        self,
        principal: Principal,
        workspace_id: str,
        attrs: dict[str, Any],
        cv_id: str | None,
        source: str = API,
        *,
        client: str = "",
    ) -> tuple[Run, Workspace]:
        """`create` in the workspace `workspace_id` (`POST /runs`): the run and its workspace, read in the same
        unit of work as the run's steps. `client`: the tool of the CLI that sent it ("": another client), which
        must be the workspace's (`tool_versions.mismatch`: the run errors at once)."""
        with unit_of_work():
            ws = self._workspaces.get(principal, workspace_id)
            return self._create_checked(principal, ws, attrs, cv_id, source, client), ws

    def _create_checked(
        self,
        principal: Principal,
        ws: Workspace,
        attrs: dict[str, Any],
        cv_id: str | None,
        source: str,
        client: str = "",
    ) -> Run:
        self._workspaces.authorize(principal, Action.QUEUE_RUN, ws)
        self.require_remote_execution(ws)  # before any write: a refused run leaves nothing behind
        cv = self.configuration_for(principal, ws, cv_id)
        may_apply = self._workspaces.can(principal, Action.APPLY_RUN, ws)
        return self._create(ws, attrs, cv, principal.username, may_apply, source=source, client=client)

    def configuration_for(self, principal: Principal, ws: Workspace, cv_id: str | None) -> ConfigurationVersion:
        """The uploaded configuration version a new run (or query run) of `ws` runs: `cv_id`, else the latest."""
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
        return cv

    def queue_for_upload(self, cv: ConfigurationVersion) -> Run | None:
        """auto-queue-runs: a configuration version's upload queues a run (its creator could queue runs; the
        workspace's auto-apply applies it only if they could apply, as decided when the version was created)."""
        if not cv.auto_queue_runs or cv.provisional:
            return None
        ws = self._workspaces.load(cv.workspace_id)
        if self._workspaces.execution_mode(ws) == "local":  # the upload stands; the server runs nothing of it
            return None
        attrs = {"message": str(cv.ingress.get("commit-message") or "")[:4000]} if cv.ingress else {}  # a forge's
        return self._create(ws, attrs, cv, cv.created_by, cv.may_apply, source=CONFIGURATION_VERSION)

    def has_configuration(self, principal: Principal, ws: Workspace) -> bool:
        """Whether a new run of `ws` has a configuration to run (an uploaded version; no write, no finalize)."""
        self._workspaces.authorize(principal, Action.READ_RUNS, ws)
        return self._cvs.latest_uploaded(ws) is not None

    def require_remote_execution(self, ws: Workspace) -> None:
        """A workspace in the `local` execution mode keeps only state: its plans and applies run on the machine of
        whoever runs terraform, and the server's runners run none of them."""
        if self._workspaces.execution_mode(ws) == "local":
            raise Conflict(
                f"workspace {ws.name} uses the local execution mode: its runs execute where terraform is run, not on"
                " this server. Change its execution mode to remote to queue runs here."
            )

    def agent_pool(self, ws: Workspace) -> str | None:
        """The agent pool a new run of `ws` waits for (None: Terrace's runners execute it)."""
        if self._workspaces.execution_mode(ws) != "agent":
            return None
        pool = self._workspaces.agent_pool(ws)
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
        client: str = "",
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
        version, tool, problem = self.resolve_version(version, ws.tool)
        problem = problem or tool_versions.mismatch(client, tool, ws.name)
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
            invoke_action_addrs=run_attributes.addresses(attrs, "invoke-action-addrs"),
            # the workspace's auto-apply applies the runs of those who may apply; the others' runs wait
            auto_apply=run_attributes.boolean(attrs, "auto-apply", ws.auto_apply and may_apply),
            plan_only=plan_only,
            save_plan=run_attributes.boolean(attrs, "save-plan", False),
            allow_empty_apply=run_attributes.boolean(attrs, "allow-empty-apply", False),
            terraform_version=version,
            tool=tool,
            variables=run_attributes.variables(attrs),
            plan=PhaseState(id=f"plan-{suffix}"),
            apply=PhaseState(id=f"apply-{suffix}"),
            source=RUN_SOURCE if trigger else source,
            trigger=trigger[1] if trigger else None,
            vcs=vcs_events.run_summary(cv.ingress),
        )
        if run_action(plan_only=plan_only, save_plan=run.save_plan, auto_apply=run.auto_apply) is Action.APPLY_RUN:
            if not may_apply:
                raise Forbidden(
                    "a run that applies without confirmation (auto-apply) needs permission to apply runs "
                    f"in workspace {ws.id}"
                )
        run.agent_pool_id = self.agent_pool(ws)
        run.resolved_variables = self.resolve_variables(ws, run.variables)  # once: a run keeps what it was given
        if cv.untrusted:  # a fork's pull request (services/vcs/): its code never sees a secret
            run.resolved_variables = [v for v in run.resolved_variables or [] if not v.get("sensitive")]
        self._cvs.seal(cv)  # the archive this run plans is final from here
        run.transition(rs.PENDING, now)
        run.status_timestamps["plan-queueable-at"] = now
        if self._organizations.by_key(ws.organization).cost_estimation_enabled and self._cost_estimation_on():
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
        if problem:  # errored at once, not after a runner's timeout; the plan's log says why (the CLI prints it)
            self._store.logs.put(run.plan.id, run.plan.attempt, HEAD, f"Error: {problem}\n".encode())
            created = self._store.load(run.id)
            return self._scheduler.finish(created, created.version, rs.ERRORED, problem)
        if queued or speculative:
            self._scheduler.enqueue(run, "plan")
        elif not plan_only and not started:
            self._scheduler.promote(ws.id)  # an older run waits, or the workspace is held: the queue decides
        return self._store.load(run.id)
