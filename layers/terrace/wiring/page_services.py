"""The reads behind the UI's pages that span areas (services/workflows/ and the runs area's Health tab): a
project's page, a workspace's overview and settings, its Health tab. Built on first use from the areas' services;
mixed into `bootstrap.Container` beside `workflow_services.py`."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from terrace.adapters.blobs import BlobStore

if TYPE_CHECKING:
    from terrace.services.access.authz import Authorizer
    from terrace.services.access.projects import ProjectService
    from terrace.services.access.team_access import TeamAccessService
    from terrace.services.access.teams import TeamService
    from terrace.services.admin.tool_versions import ToolVersionService
    from terrace.services.runs.assessments import AssessmentService
    from terrace.services.runs.health import HealthPages
    from terrace.services.runs.runs import RunService
    from terrace.services.state.versions import StateVersionService
    from terrace.services.workflows.project_pages import ProjectPages
    from terrace.services.workflows.workspace_overview import WorkspaceOverview
    from terrace.services.workflows.workspace_settings import WorkspaceSettings
    from terrace.services.workspaces.agent_pools import AgentPoolService
    from terrace.services.workspaces.change_requests import ChangeRequestService
    from terrace.services.workspaces.workspaces import WorkspaceService


class PageServices:
    blobs: BlobStore
    # from the areas
    authz: Authorizer
    teams: TeamService
    team_access: TeamAccessService
    projects: ProjectService
    workspaces: WorkspaceService
    agent_pools: AgentPoolService  # wiring/workspace_services.py
    change_requests: ChangeRequestService  # wiring/workspace_services.py
    state_versions: StateVersionService
    runs: RunService
    assessments: AssessmentService  # wiring/run_services.py
    tool_versions: ToolVersionService  # wiring/admin_services.py

    @cached_property
    def project_pages(self) -> ProjectPages:
        from terrace.services.workflows.project_pages import ProjectPages

        return ProjectPages(self.authz, self.teams, self.projects, self.workspaces, self.team_access)

    @cached_property
    def workspace_overview(self) -> WorkspaceOverview:
        from terrace.services.workflows.workspace_overview import WorkspaceOverview

        return WorkspaceOverview(self.workspaces, self.state_versions, self.runs, self.change_requests)

    @cached_property
    def workspace_settings(self) -> WorkspaceSettings:
        from terrace.services.workflows.workspace_settings import WorkspaceSettings

        return WorkspaceSettings(
            self.workspaces, self.agent_pools, self.projects, lambda tool: self.tool_versions.usable_versions(tool)
        )

    @cached_property
    def health_pages(self) -> HealthPages:
        """A workspace's Health tab (a runs-area read over assessments and workspaces)."""
        from terrace.services.runs.health import HealthPages

        return HealthPages(self.assessments, self.workspaces, self.blobs)
