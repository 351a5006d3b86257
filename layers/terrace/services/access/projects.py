"""Projects: groups of workspaces that teams get access to together. Every organization has a
Default Project (workspaces without a project are in it); it cannot be deleted or renamed.

A project holds defaults its workspaces inherit: key-value tag bindings (a workspace's own value of a key wins,
unless the organization reserves the key with `disable-overrides`), and an execution mode with its agent pool
(HCP's `setting-overwrites`: a project that sets none defers to its organization)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from terrace.domain import auto_destroy, limits
from terrace.domain.errors import Conflict, Forbidden, Invalid, NotFound
from terrace.domain.ids import looks_like, new_id
from terrace.domain.principal import Principal
from terrace.domain.projects import Project, execution_settings
from terrace.domain.projects import check_name as _name
from terrace.domain.tags import check_count, tag_bindings
from terrace.services.access import grants
from terrace.services.access.authz import Action
from terrace.services.access.store_projects import ProjectStore
from terrace.services.access.teams import TeamService

# the workspaces area's agent pools: whether a pool id is one of the organization's (by its key)
PoolCheck = Callable[[str, str], bool]


class ProjectService:
    def __init__(self, store: ProjectStore, teams: TeamService, *, pool_exists: PoolCheck) -> None:
        self._store = store
        self._teams = teams  # organizations read through it get their defaults
        self._pool_exists = pool_exists

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

    def bindings_in(self, organization: str) -> dict[str, tuple[tuple[str, str], ...]]:
        """Each project's tag bindings by project id (no permission check: workspaces filter by them)."""
        return {p.id: p.tag_bindings for p in self._store.projects_of(organization)}

    def all_in(self, organization: str) -> dict[str, Project]:
        """The organization's projects by id (no permission check: what workspaces inherit; one query)."""
        return {p.id: p for p in self._store.projects_of(organization)}

    def in_organization(self, organization: str, project_id: str) -> Project:
        """A project a workspace of `organization` may belong to (another organization's is not found)."""
        project = self.load(project_id)
        if project.organization != organization:
            raise NotFound(f"project {project_id} not found")
        return project

    def list(
        self,
        principal: Principal,
        organization: str,
        names: list[str] | None = None,
        query: str | None = None,
        tagged: list[tuple[str, str | None]] | None = None,
    ) -> list[Project]:
        """The organization's projects: `names` exactly, `query` within the name, `tagged` bindings (a value None:
        any value of the key)."""
        org = self._teams.organization(principal, organization, Action.READ_PROJECTS)
        return [
            p
            for p in self._store.projects_of(org.key)
            if (not names or p.name in names)
            and (not query or query.lower() in p.name.lower())
            and all(_bound(p.tag_bindings, key, value) for key, value in tagged or [])
        ]

    def create(self, principal: Principal, organization: str, attrs: dict[str, Any], bindings: Any = None) -> Project:
        org = self._teams.organization(principal, organization, Action.MANAGE_PROJECTS)
        name = _name(attrs.get("name"))
        description = limits.text(attrs.get("description") or "", "description", limits.DESCRIPTION_MAX)
        project = self._settings(Project(new_id("prj"), name, org.key, description, "", 1), attrs, bindings)
        return self._store.create_project(project, f"project {name} already exists in {org.name}")

    def update(self, principal: Principal, project_id: str, attrs: dict[str, Any], bindings: Any = None) -> Project:
        """Name, description and settings; `bindings` (a list) replaces the project's tag bindings."""
        project = self.get(principal, project_id, Action.MANAGE_PROJECTS)
        name = project.name
        if "name" in attrs and attrs["name"] != project.name:
            if project.is_default:
                raise Invalid("the Default Project cannot be renamed", pointer="/data/attributes/name")
            name = _name(attrs["name"])
        description = project.description
        if "description" in attrs:
            description = limits.text(attrs["description"] or "", "description", limits.DESCRIPTION_MAX)
        updated = self._settings(dataclasses.replace(project, name=name, description=description), attrs, bindings)
        return self._store.update_project(project, updated)

    # tag bindings ----------------------------------------------------------------------------
    def add_bindings(self, principal: Principal, project_id: str, items: Any) -> Project:
        """PATCH /projects/:id/tag-bindings: add bindings (an existing key takes the new value)."""
        project = self.get(principal, project_id, Action.MANAGE_PROJECTS)
        merged = {**dict(project.tag_bindings), **dict(tag_bindings(items, "/data"))}
        updated = dataclasses.replace(project, tag_bindings=tuple(merged.items()))
        check_count(updated.tag_bindings, "/data")
        return self._store.update_project(project, updated)

    def delete_bindings(self, principal: Principal, project_id: str) -> None:
        """DELETE /projects/:id/tag-bindings: every binding of the project."""
        project = self.get(principal, project_id, Action.MANAGE_PROJECTS)
        if project.tag_bindings:
            self._store.update_project(project, dataclasses.replace(project, tag_bindings=()))

    def _settings(self, project: Project, attrs: dict[str, Any], bindings: Any) -> Project:
        mode, pool = execution_settings(project, attrs)
        if pool and pool != project.default_agent_pool_id and not self._pool_exists(project.organization, pool):
            raise Invalid(f"agent pool {pool} not found", pointer="/data/attributes/default-agent-pool-id")
        duration = project.auto_destroy_activity_duration
        if auto_destroy.DURATION in attrs:
            duration = auto_destroy.parse_duration(attrs[auto_destroy.DURATION])
        found = tag_bindings(bindings) if bindings is not None else project.tag_bindings
        check_count(found)
        return dataclasses.replace(project, default_execution_mode=mode, default_agent_pool_id=pool,
                                   auto_destroy_activity_duration=duration, tag_bindings=found)  # fmt: skip

    def delete(self, principal: Principal, project_id: str, workspace_count: int) -> None:
        project = self.get(principal, project_id, Action.MANAGE_PROJECTS)
        if project.is_default:
            raise Forbidden("the Default Project cannot be deleted")
        if workspace_count:
            raise Conflict(f"project {project.name} still holds {workspace_count} workspaces; move or delete them")
        self._store.delete_project(project)
        grants.forget()


def _bound(bindings: tuple[tuple[str, str], ...], key: str, value: str | None) -> bool:
    return any(k == key and (value is None or v == value) for k, v in bindings)
