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

from terrace.domain import query_runs as model
from terrace.domain.errors import Invalid, NotFound
from terrace.domain.principal import Principal
from terrace.domain.runs import Run
from terrace.services.access.authz import Action
from terrace.services.runs import run_attributes
from terrace.services.runs.configuration_versions import ConfigurationVersionService
from terrace.services.runs.runs import RunService
from terrace.services.runs.scheduler import RunScheduler
from terrace.services.runs.side_runs import new_side_run, queue_side_run
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
        version, tool, problem = self._runs.resolve_version(version, ws.tool)
        run = new_side_run(
            ws,
            cv.id,
            created_by=principal.username,
            message=MESSAGE,
            source=source,
            terraform_version=version,
            tool=tool,
            variables=variables,
            agent_pool_id=pool,
            query=True,
            generate_config_out=generate,
        )
        run.resolved_variables = self._runs.resolve_variables(ws, run.variables)
        self._cvs.seal(cv)  # the archive this query runs is final from here
        return queue_side_run(self._store, self._scheduler, run, problem)

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
