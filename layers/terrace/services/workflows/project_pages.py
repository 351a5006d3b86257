"""The UI's project pages, each read in one call across the access area (the projects, the caller's right to
manage them, their team access) and the workspaces area (the workspaces in each project the caller may read)."""

from __future__ import annotations

from dataclasses import dataclass

from terrace.domain.errors import NotFound
from terrace.domain.principal import Principal
from terrace.domain.projects import Project
from terrace.domain.workspace import Workspace
from terrace.services.access.authz import Action, Authorizer
from terrace.services.access.projects import ProjectService
from terrace.services.access.team_access import AccessPage, TeamAccessService
from terrace.services.access.teams import TeamService
from terrace.services.workspaces.workspaces import WorkspaceService


@dataclass(frozen=True)
class ProjectRow:
    project: Project
    workspaces: list[Workspace]  # those the caller may read


@dataclass(frozen=True)
class ProjectsPage:
    rows: list[ProjectRow]
    can_manage: bool


@dataclass(frozen=True)
class ProjectPage:
    project: Project
    workspaces: list[Workspace]
    can_manage: bool
    access: AccessPage | None  # its team access (None: the caller may not manage projects)


class ProjectPages:
    def __init__(
        self,
        authz: Authorizer,
        teams: TeamService,
        projects: ProjectService,
        workspaces: WorkspaceService,
        team_access: TeamAccessService,
    ) -> None:
        self._authz = authz
        self._teams = teams
        self._projects = projects
        self._workspaces = workspaces
        self._team_access = team_access

    def of_organization(self, principal: Principal, organization: str) -> ProjectsPage:
        """Every project of the organization (the Default Project first), each with its readable workspaces."""
        org = self._teams.organization(principal, organization, Action.READ_PROJECTS)
        projects = self._projects.list(principal, organization)
        default = next((p.id for p in projects if p.is_default), "")
        workspaces = self._workspaces.list(principal, organization)
        rows = [ProjectRow(p, [ws for ws in workspaces if (ws.project_id or default) == p.id]) for p in projects]
        rows.sort(key=lambda row: (not row.project.is_default, row.project.name.lower()))
        return ProjectsPage(rows, self._authz.can(principal, Action.MANAGE_PROJECTS, org.view))

    def read(self, principal: Principal, organization: str, project_id: str) -> ProjectPage:
        """The project `project_id` of the organization named `organization` (another organization's is absent)."""
        project = self._projects.get(principal, project_id)
        org = self._teams.organization_by_key(principal, project.organization, Action.READ_PROJECTS)
        if org.name != organization:
            raise NotFound(f"project {project_id} not found")
        workspaces = self._workspaces.list(principal, organization)
        default = project.id if project.is_default else None
        inside = [ws for ws in workspaces if ws.project_id == project.id or (default and not ws.project_id)]
        can_manage = self._authz.can(principal, Action.MANAGE_PROJECTS, org.view)
        access = self._team_access.project_page(principal, project.id) if can_manage else None
        return ProjectPage(project, inside, can_manage, access)
