"""A registry module's test runs (`domain/module_tests.py`) in its test workspace: the configuration versions
they test, their creation, reads, cancel and force-cancel. The caller passes the module's test workspace; every
method asks the Authorizer about it (a test workspace: the organization's `manage-modules`), and a test run is
reached only through its own workspace, never as a run (the workspace API finds no test workspace).

A test run is created plan-only and queued at once in the lowest lane, like a query run (`query_runs.py`); the
runner runs `terraform test -json` (`runner/module_tests.py`) and reports its summary with the plan phase's
finish. A configuration version made here never queues a run of its own when it lands.
"""

from __future__ import annotations

import builtins
from typing import Any

from terrace.domain import module_tests as model
from terrace.domain.configuration_versions import UPLOADED, ConfigurationVersion
from terrace.domain.errors import Invalid, NotFound
from terrace.domain.principal import Principal
from terrace.domain.runs import Run
from terrace.domain.workspace import Workspace
from terrace.services.access.authz import Action
from terrace.services.runs import run_attributes
from terrace.services.runs.configuration_versions import ConfigurationVersionService
from terrace.services.runs.runs import RunService
from terrace.services.runs.scheduler import RunScheduler
from terrace.services.runs.side_runs import new_side_run, queue_side_run
from terrace.services.runs.store import RunStore
from terrace.services.workspaces.workspaces import WorkspaceService

MESSAGE = "Module test run"


class ModuleTestRunService:
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

    def _test_workspace(self, principal: Principal, ws: Workspace, action: Action) -> Workspace:
        if ws.module_id is None:
            raise NotFound(f"workspace {ws.id} not found")
        self._workspaces.authorize(principal, action, ws)
        return ws

    def configuration(self, principal: Principal, ws: Workspace) -> ConfigurationVersion:
        """A pending configuration version for a test run (`ConfigurationVersions.CreateForRegistryModule`)."""
        self._test_workspace(principal, ws, Action.QUEUE_RUN)
        return self._cvs.create(principal, ws, {"auto-queue-runs": False, "provisional": True})

    def upload_url(self, cv: ConfigurationVersion) -> str | None:
        return self._cvs.upload_url(cv)

    def create(self, principal: Principal, ws: Workspace, attrs: dict[str, Any], cv_id: str | None) -> Run:
        """A test run of the uploaded configuration version `cv_id` of the module's test workspace, queued."""
        self._test_workspace(principal, ws, Action.QUEUE_RUN)
        options = model.options(attrs)
        variables = run_attributes.variables(attrs)
        cv = self._configuration_of(ws, cv_id)
        version, tool, problem = self._runs.resolve_version(ws.terraform_version, ws.tool)
        run = new_side_run(
            ws,
            cv.id,
            created_by=principal.username,
            message=MESSAGE,
            source="terraform-cli",
            terraform_version=version,
            tool=tool,
            variables=variables,
            test=True,
            test_options=options.model_dump(),
        )
        run.resolved_variables = self._runs.resolve_variables(ws, run.variables)
        self._cvs.seal(cv)
        return queue_side_run(self._store, self._scheduler, run, problem)

    def _configuration_of(self, ws: Workspace, cv_id: str | None) -> ConfigurationVersion:
        pointer = "/data/relationships/configuration-version"
        if not cv_id:
            raise Invalid("relationships.configuration-version is required", pointer=pointer)
        try:
            cv = self._cvs.load(cv_id)
        except NotFound:
            cv = None
        if cv is None or cv.workspace_id != ws.id:
            raise NotFound(f"configuration version {cv_id} not found")
        cv = self._cvs.finalize(cv)  # a write: its archive is there but its landing is not handled yet
        if cv.status != UPLOADED:
            raise Invalid(f"configuration version {cv.id} is {cv.status}, not uploaded", pointer=pointer)
        return cv

    def list(self, principal: Principal, ws: Workspace | None) -> builtins.list[Run]:
        """The module's test runs, newest first (none while it has no test workspace)."""
        if ws is None:
            return []
        self._test_workspace(principal, ws, Action.READ_RUNS)
        return self._store.tests_of(ws.id)

    def get(self, principal: Principal, ws: Workspace | None, test_run_id: str) -> Run:
        missing = NotFound(f"test run {test_run_id} not found")
        run_id = model.run_id_of(test_run_id)
        if ws is None or run_id is None:
            raise missing
        self._test_workspace(principal, ws, Action.READ_RUNS)
        try:
            run = self._store.load(run_id)
        except NotFound as exc:
            raise missing from exc
        if not run.test or run.workspace_id != ws.id:
            raise missing
        return run

    def cancel(self, principal: Principal, ws: Workspace | None, test_run_id: str) -> Run:
        run = self.get(principal, ws, test_run_id)
        assert ws is not None  # `get` found the run in it
        self._test_workspace(principal, ws, Action.CANCEL_RUN)
        return self._runs.cancel_checked(run.id)

    def force_cancel(self, principal: Principal, ws: Workspace | None, test_run_id: str) -> Run:
        run = self.get(principal, ws, test_run_id)
        assert ws is not None
        self._test_workspace(principal, ws, Action.CANCEL_RUN)
        return self._runs.force_cancel_checked(run.id)
