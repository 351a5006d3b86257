"""Query runs (`domain/query_runs.py`): `terraform query` run remotely, HCP Terraform's Query Runs API.

A query run is created plan-only and queued at once in the lowest lane (it takes no workspace lock, waits for no
other run, has no task stage and no cost estimate); the runner runs `terraform query -json` in the job sandbox
as it runs plans (`runner/execution.py`) and its JSON lines are the plan phase's log. Reads, cancel and
force-cancel are the runs' own (`run_actions.py`), asked for a query run: a query run is never read as a run,
nor a run as a query run. Creating one is queueing a plan: its provider code runs with the workspace's
variables and credentials (`QUEUE_RUN`).
"""

from __future__ import annotations

from typing import Any

from terrace.domain import clock
from terrace.domain import query_runs as model
from terrace.domain import runs as rs
from terrace.domain.errors import Invalid, NotFound
from terrace.domain.ids import new_id
from terrace.domain.principal import Principal
from terrace.domain.runs import PhaseState, Run
from terrace.services.access.authz import Action
from terrace.services.runs import run_attributes
from terrace.services.runs.configuration_versions import ConfigurationVersionService
from terrace.services.runs.runs import RunService
from terrace.services.runs.scheduler import RunScheduler
from terrace.services.runs.store import RunStore
from terrace.services.unit_of_work import unit_of_work
from terrace.services.workspaces.workspaces import WorkspaceService

MESSAGE = "Query run"
VERSION_MAX = 64


def _source(attrs: dict[str, Any]) -> str:
    source = attrs.get("source", model.SOURCE)
    if source is None:
        return model.SOURCE
    if source != model.SOURCE:
        raise Invalid(f"source must be {model.SOURCE!r}", pointer="/data/attributes/source")
    return model.SOURCE


class QueryRunService:
    def __init__(
        self,
        store: RunStore,
        scheduler: RunScheduler,
        runs: RunService,
        workspaces: WorkspaceService,
        cvs: ConfigurationVersionService,
    ) -> None:
        self._store, self._scheduler, self._runs = store, scheduler, runs
        self._workspaces, self._cvs = workspaces, cvs

    def create(self, principal: Principal, workspace_id: str, attrs: dict[str, Any], cv_id: str | None) -> Run:
        """A query run of `cv_id` (else the workspace's latest uploaded configuration version), queued."""
        with unit_of_work():  # the workspace and the version are read once for all its steps
            return self._create(principal, workspace_id, attrs, cv_id)

    def _create(self, principal: Principal, workspace_id: str, attrs: dict[str, Any], cv_id: str | None) -> Run:
        ws = self._workspaces.get(principal, workspace_id)
        self._workspaces.authorize(principal, Action.QUEUE_RUN, ws)
        self._runs.require_remote_execution(ws)  # before any write: a refused query run leaves nothing
        source = _source(attrs)
        generate = run_attributes.boolean(attrs, "generate-config-out", True)
        variables = run_attributes.variables(attrs)
        version = attrs.get("terraform-version") or ws.terraform_version
        if not isinstance(version, str) or len(version) > VERSION_MAX:
            raise Invalid("terraform-version must be a string", pointer="/data/attributes/terraform-version")
        cv = self._runs.configuration_for(principal, ws, cv_id)
        pool = self._runs.agent_pool(ws)
        version, problem = self._runs.resolve_version(version)
        now, tail = clock.now_iso(), new_id("run").split("-", 1)[1]
        run = Run(
            id=f"run-{tail}",
            organization=ws.organization,
            workspace_id=ws.id,
            configuration_version_id=cv.id,
            created_at=now,
            created_by=principal.username,
            message=MESSAGE,
            source=source,
            plan_only=True,
            terraform_version=version,
            variables=variables,
            plan=PhaseState(id=f"plan-{tail}"),
            apply=PhaseState(id=f"apply-{tail}"),
            agent_pool_id=pool,
            query=True,
            generate_config_out=generate,
        )
        run.resolved_variables = self._runs.resolve_variables(ws, run.variables)
        self._cvs.seal(cv)  # the archive this query runs is final from here
        run.transition(rs.PENDING, now)
        run.plan.mark(rs.P_PENDING, now)
        run.apply.mark(rs.P_PENDING, now)
        if problem:  # errored at once, not after a runner's timeout
            self._store.save([(run, None)], None, {})
            return self._scheduler.finish(self._store.load(run.id), run.version, rs.ERRORED, problem)
        self._scheduler.start_plan(run, now)  # no task stage: always queued
        self._store.save([(run, None)], None, {})
        self._scheduler.enqueue(run, "plan")
        return run

    def get(self, principal: Principal, query_run_id: str) -> Run:
        run_id = model.run_id_of(query_run_id)
        try:
            if run_id is None:
                raise NotFound(query_run_id)
            return self._runs.get(principal, run_id, query=True)
        except NotFound as exc:
            raise NotFound(f"query run {query_run_id} not found") from exc

    def list(self, principal: Principal, workspace_id: str) -> list[Run]:
        """The workspace's query runs, newest first."""
        ws = self._workspaces.get(principal, workspace_id, Action.READ_RUNS)
        return self._store.queries_of(ws.id)

    def cancel(self, principal: Principal, query_run_id: str) -> Run:
        return self._runs.cancel(principal, self._run_id(principal, query_run_id), query=True)

    def force_cancel(self, principal: Principal, query_run_id: str) -> Run:
        return self._runs.force_cancel(principal, self._run_id(principal, query_run_id), query=True)

    def _run_id(self, principal: Principal, query_run_id: str) -> str:
        return self.get(principal, query_run_id).id
