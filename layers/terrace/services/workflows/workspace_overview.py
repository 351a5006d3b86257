"""A workspace's overview page (web UI): one read across the workspaces area (the workspace and what the
caller may do in it), the state area (its current outputs and resources, when the caller may read them) and
the runs area (its current run while underway, else its latest), its project's name, and its change requests
not archived."""

from __future__ import annotations

from dataclasses import dataclass, field

from terrace.domain import runs as rs
from terrace.domain.change_requests import ChangeRequest
from terrace.domain.principal import Principal
from terrace.domain.runs import Run
from terrace.domain.workspace import Workspace
from terrace.services.runs.runs import RunService
from terrace.services.state.index import IndexedResource, StoredOutput
from terrace.services.state.versions import StateVersionService
from terrace.services.workspaces.change_requests import ChangeRequestService
from terrace.services.workspaces.workspaces import WorkspaceService


@dataclass(frozen=True)
class Overview:
    ws: Workspace
    latest_run: Run | None  # the run its status is (`domain/runs.py: current_of`), not always the newest
    outputs: list[StoredOutput] = field(default_factory=list)
    resources: list[IndexedResource] = field(default_factory=list)
    execution_mode: str = "remote"  # the effective one (the organization's default unless the workspace overwrote it)
    permissions: dict[str, bool] = field(default_factory=dict)  # the caller's, as the API's workspace document
    project_name: str = "Default Project"
    change_requests: list[ChangeRequest] = field(default_factory=list)  # not archived, newest first
    has_configuration: bool = True  # an uploaded configuration version a new run would plan
    tool: str = "terraform"  # the tool its runs use (`iac-platform`)


class WorkspaceOverview:
    def __init__(
        self,
        workspaces: WorkspaceService,
        state_versions: StateVersionService,
        runs: RunService,
        change_requests: ChangeRequestService,
    ) -> None:
        self._workspaces, self._state_versions, self._runs = workspaces, state_versions, runs
        self._change_requests = change_requests

    def workspace(self, principal: Principal, organization: str, name: str) -> Workspace:
        """The workspace alone (what the overview's forms act on), checked as the overview's read."""
        return self._workspaces.get_by_name(principal, organization, name)

    def read(self, principal: Principal, organization: str, name: str) -> Overview:
        ws = self._workspaces.open_by_name(principal, organization, name)  # a person opened it: a run may follow
        outputs: list[StoredOutput] = []
        resources: list[IndexedResource] = []
        can = self._workspaces.permissions(principal, ws)  # a team may read a workspace but not its state
        if ws.current_state_version_id and can["can-read-state-outputs"]:
            outputs = self._state_versions.current_outputs(principal, ws.id)
        if ws.current_state_version_id and can["can-read-state-versions"]:
            resources = self._state_versions.resources(principal, ws.id)
        latest_run = self._runs.get(principal, ws.latest_run_id) if ws.latest_run_id else None
        current = None
        if ws.current_run_id and ws.current_run_id != ws.latest_run_id:
            current = self._runs.get(principal, ws.current_run_id)
        shown = rs.current_of(current, latest_run)
        project = self._workspaces.project_name_of(ws)
        configured = self._runs.has_configuration(principal, ws)
        mode, requests = self._workspaces.execution_mode(ws), self._change_requests.open_of(ws)
        tool = self._workspaces.tool_of(ws)
        return Overview(ws, shown, outputs, resources, mode, can, project, requests, configured, tool)
