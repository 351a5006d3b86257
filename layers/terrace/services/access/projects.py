"""Projects: groups of workspaces that teams get access to together. Every organization has a
Default Project (workspaces without a project are in it); it cannot be deleted or renamed."""

from __future__ import annotations

from typing import Any

from terrace.domain import limits
from terrace.domain.errors import Conflict, Forbidden, Invalid, NotFound
from terrace.domain.ids import looks_like, new_id
from terrace.domain.principal import Principal
from terrace.domain.projects import Project
from terrace.domain.projects import check_name as _name
from terrace.services.access import grants
from terrace.services.access.authz import Action
from terrace.services.access.store_projects import ProjectStore
from terrace.services.access.teams import TeamService


class ProjectService:
    def __init__(self, store: ProjectStore, teams: TeamService) -> None:
        self._store = store
        self._teams = teams  # organizations read through it get their defaults

    def load(self, project_id: str) -> Project:
        project = self._store.project(project_id) if looks_like(project_id, "prj") else None
        if project is None:
            raise NotFound(f"project {project_id} not found")
        return project

    def get(self, principal: Principal, project_id: str, action: Action = Action.READ_PROJECTS) -> Project:
        project = self.load(project_id)
        try:
            self._teams.organization_by_key(principal, project.organization)
        except NotFound as exc:
            raise NotFound(f"project {project_id} not found") from exc
        if action is not Action.READ_PROJECTS:
            self._teams.organization_by_key(principal, project.organization, action)
        return project

    def in_organization(self, organization: str, project_id: str) -> Project:
        """A project a workspace of `organization` may belong to (another organization's is not found)."""
        project = self.load(project_id)
        if project.organization != organization:
            raise NotFound(f"project {project_id} not found")
        return project

    def list(self, principal: Principal, organization: str, names: list[str] | None = None,
             query: str | None = None) -> list[Project]:  # fmt: skip
        org = self._teams.organization(principal, organization, Action.READ_PROJECTS)
        found = [
            p
            for p in self._store.projects_of(org.key)
            if (not names or p.name in names) and (not query or query.lower() in p.name.lower())
        ]
        return found

    def create(self, principal: Principal, organization: str, attrs: dict[str, Any]) -> Project:
        org = self._teams.organization(principal, organization, Action.MANAGE_PROJECTS)
        name = _name(attrs.get("name"))
        description = limits.text(attrs.get("description") or "", "description", limits.DESCRIPTION_MAX)
        return self._store.create_project(
            org.key, new_id("prj"), name, description, f"project {name} already exists in {org.name}"
        )

    def update(self, principal: Principal, project_id: str, attrs: dict[str, Any]) -> Project:
        project = self.get(principal, project_id, Action.MANAGE_PROJECTS)
        name = project.name
        if "name" in attrs and attrs["name"] != project.name:
            if project.is_default:
                raise Invalid("the Default Project cannot be renamed", pointer="/data/attributes/name")
            name = _name(attrs["name"])
        description = None
        if "description" in attrs:
            description = limits.text(attrs["description"] or "", "description", limits.DESCRIPTION_MAX)
        return self._store.update_project(project, name, description)

    def delete(self, principal: Principal, project_id: str, workspace_count: int) -> None:
        project = self.get(principal, project_id, Action.MANAGE_PROJECTS)
        if project.is_default:
            raise Forbidden("the Default Project cannot be deleted")
        if workspace_count:
            raise Conflict(f"project {project.name} still holds {workspace_count} workspaces; move or delete them")
        self._store.delete_project(project)
        grants.forget()
