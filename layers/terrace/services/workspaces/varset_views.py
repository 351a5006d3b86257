"""Variable sets as the API and the UI show them: each set with its organization's current name, its variables'
ids (or the variables, `include=vars`), and the workspaces and projects it applies to (`include=workspaces`,
`projects`: their names). Reads only; each entry point checks the caller first."""

from __future__ import annotations

from terrace.domain.errors import NotFound
from terrace.domain.principal import Principal
from terrace.domain.projects import Project
from terrace.domain.varsets import VariableSet, VarsetView
from terrace.domain.workspace import Workspace
from terrace.services.access.organizations import OrganizationService
from terrace.services.access.projects import ProjectService
from terrace.services.workspaces.varset_variables import SetVariableService
from terrace.services.workspaces.varsets import VariableSetService
from terrace.services.workspaces.workspaces import WorkspaceService

INCLUDABLE = frozenset({"vars", "workspaces", "projects"})


class VarsetViews:
    def __init__(
        self,
        organizations: OrganizationService,
        workspaces: WorkspaceService,
        projects: ProjectService,
        varsets: VariableSetService,
        set_variables: SetVariableService,
    ) -> None:
        self._orgs, self._workspaces, self._projects = organizations, workspaces, projects
        self._varsets, self._set_variables = varsets, set_variables

    def present(self, vs: VariableSet, include: frozenset[str] = frozenset()) -> VarsetView:
        """One set the caller was allowed to read."""
        include = include & INCLUDABLE
        workspaces = (
            [ws for ws in (self._workspace(i) for i in vs.workspace_ids) if ws] if "workspaces" in include else []
        )
        projects = [p for p in (self._project(i) for i in vs.project_ids) if p] if "projects" in include else []
        return VarsetView(vs, self._orgs.name_of(vs.organization), self._set_variables.of(vs), workspaces, projects,
                          include)  # fmt: skip

    def get(self, principal: Principal, varset_id: str, include: frozenset[str] = frozenset()) -> VarsetView:
        return self.present(self._varsets.get(principal, varset_id), include)

    def of_organization(
        self, principal: Principal, organization: str, query: str | None, include: frozenset[str] = frozenset()
    ) -> list[VarsetView]:
        return [self.present(vs, include) for vs in self._varsets.list(principal, organization, query)]

    def of_workspace(
        self, principal: Principal, workspace_id: str, query: str | None, include: frozenset[str] = frozenset()
    ) -> list[VarsetView]:
        ws = self._workspaces.get(principal, workspace_id)
        return [self.present(vs, include) for vs in self._varsets.of_workspace(principal, ws, query)]

    def of_project(
        self, principal: Principal, project_id: str, query: str | None, include: frozenset[str] = frozenset()
    ) -> list[VarsetView]:
        project = self._projects.get(principal, project_id)
        return [self.present(vs, include) for vs in self._varsets.of_project(principal, project, query)]

    def choices(self, principal: Principal, organization: str) -> tuple[list[Workspace], list[Project]]:
        """What the UI offers to apply a set to: the organization's workspaces the caller can see, its projects."""
        return self._workspaces.list(principal, organization), self._projects.list(principal, organization)

    def _workspace(self, workspace_id: str) -> Workspace | None:
        try:
            return self._workspaces.load(workspace_id)
        except NotFound:
            return None

    def _project(self, project_id: str) -> Project | None:
        try:
            return self._projects.load(project_id)
        except NotFound:
            return None
