"""A workspace's Settings page (web UI): one read across the workspaces area (the workspace, the agent pools it
may run on) and the access area (the projects it may move to), and the move itself, checked as the API's
`POST /projects/:id/relationships/workspaces` checks it (the workspace's admins, a project the caller may read)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from terrace.domain import tool_versions as tv
from terrace.domain.agent_pools import AgentPool
from terrace.domain.principal import Principal
from terrace.domain.projects import Project, default_project_id
from terrace.domain.workspace import Workspace
from terrace.services.access.projects import ProjectService
from terrace.services.workspaces.agent_pools import AgentPoolService
from terrace.services.workspaces.workspaces import WorkspaceService


@dataclass(frozen=True)
class SettingsView:
    ws: Workspace
    pools: list[AgentPool] = field(default_factory=list)
    projects: list[Project] = field(default_factory=list)  # by name, the workspace's own among them
    project_id: str = ""  # the workspace's project (its organization's Default Project when it names none)
    tool: str = ""  # the tool its runs use (`iac-platform`)
    versions: dict[str, list[str]] = field(default_factory=dict)  # each tool's versions a run may use, newest first


class WorkspaceSettings:
    def __init__(
        self,
        workspaces: WorkspaceService,
        agent_pools: AgentPoolService,
        projects: ProjectService,
        tool_versions: Callable[[str], list[str]] = lambda _tool: [],
    ) -> None:
        self._workspaces, self._agent_pools, self._projects = workspaces, agent_pools, projects
        self._tool_versions = tool_versions  # a tool's usable versions, oldest first (ToolVersionService)

    def read(self, principal: Principal, organization: str, name: str) -> SettingsView:
        ws = self._workspaces.get_by_name(principal, organization, name)
        return self.view_of(principal, organization, ws)

    def view_of(self, principal: Principal, organization: str, ws: Workspace) -> SettingsView:
        """What the page shows of `ws` (read by the caller) in `organization` (by the name its path gives)."""
        pools = self._agent_pools.list(principal, organization)
        projects = sorted(self._projects.list(principal, organization), key=lambda p: p.name.lower())
        project_id = ws.project_id or default_project_id(ws.organization)
        versions = {tool: self._tool_versions(tool)[::-1] for tool in tv.TOOLS}
        return SettingsView(ws, pools, projects, project_id, self._workspaces.tool_of(ws), versions)

    def move(self, principal: Principal, ws: Workspace, project_id: str) -> Workspace:
        """Move `ws` to another project of its organization (not found: another organization's, or one the
        caller may not read; refused: a caller who may not change the workspace)."""
        self._workspaces.move_all(principal, [ws.id], project_id)
        return self._workspaces.get(principal, ws.id)
