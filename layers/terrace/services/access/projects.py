"""Projects: groups of workspaces that teams get access to together. Every organization has a
Default Project (workspaces without a project are in it); it cannot be deleted or renamed."""

from __future__ import annotations

from typing import Any

from terrace.adapters.table import ConditionFailed, Delete, Put, Table, WriteOp
from terrace.domain import limits
from terrace.domain.errors import Conflict, Forbidden, Invalid, NotFound
from terrace.domain.ids import looks_like, new_id
from terrace.domain.principal import Principal
from terrace.domain.projects import Project
from terrace.domain.projects import check_name as _name
from terrace.services.access import access_keys as keys
from terrace.services.access import grants, org_defaults
from terrace.services.access.authz import Action
from terrace.services.access.teams import TeamService


def _project(item: dict[str, Any]) -> Project:
    return Project(item["id"], item["name"], item["organization"], item.get("description", ""), item["created_at"],
                   int(item["version"]))  # fmt: skip


class ProjectService:
    def __init__(self, table: Table, teams: TeamService) -> None:
        self._table = table
        self._teams = teams  # organizations read through it get their defaults

    def load(self, project_id: str) -> Project:
        item = self._table.get(*keys.project_key(project_id)) if looks_like(project_id, "prj") else None
        if item is None:
            raise NotFound(f"project {project_id} not found")
        return _project(item)

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
        found = [_project(i) for i in self._table.query(keys.projects_index(org.key), index="gsi1")]
        found = [p for p in found if (not names or p.name in names) and (not query or query.lower() in p.name.lower())]
        return found

    def create(self, principal: Principal, organization: str, attrs: dict[str, Any]) -> Project:
        org = self._teams.organization(principal, organization, Action.MANAGE_PROJECTS)
        name = _name(attrs.get("name"))
        description = limits.text(attrs.get("description") or "", "description", limits.DESCRIPTION_MAX)
        items = org_defaults.project_items(org.key, new_id("prj"), name, description)
        try:
            self._table.transact([Put(item, if_absent=True) for item in items])
        except ConditionFailed as exc:
            raise Conflict(f"project {name} already exists in {org.name}") from exc
        return _project(items[0])

    def update(self, principal: Principal, project_id: str, attrs: dict[str, Any]) -> Project:
        project = self.get(principal, project_id, Action.MANAGE_PROJECTS)
        item = self._table.get(*keys.project_key(project.id))
        assert item is not None
        ops: list[WriteOp] = []
        if "name" in attrs and attrs["name"] != project.name:
            if project.is_default:
                raise Invalid("the Default Project cannot be renamed", pointer="/data/attributes/name")
            name = _name(attrs["name"])
            npk, nsk = keys.project_name_key(project.organization, name)
            ops += [Put({"pk": npk, "sk": nsk, "project_id": project.id}, if_absent=True),
                    Delete(*keys.project_name_key(project.organization, project.name))]  # fmt: skip
            item.update(name=name, gsi1sk=name.lower())
        if "description" in attrs:
            item["description"] = limits.text(attrs["description"] or "", "description", limits.DESCRIPTION_MAX)
        item["version"] = project.version + 1
        try:
            self._table.transact([Put(item, if_version=project.version), *ops])
        except ConditionFailed as exc:
            raise Conflict("a project of that name exists, or the project changed; retry") from exc
        return _project(item)

    def delete(self, principal: Principal, project_id: str, workspace_count: int) -> None:
        project = self.get(principal, project_id, Action.MANAGE_PROJECTS)
        if project.is_default:
            raise Forbidden("the Default Project cannot be deleted")
        if workspace_count:
            raise Conflict(f"project {project.name} still holds {workspace_count} workspaces; move or delete them")
        doomed = [keys.project_key(project.id), keys.project_name_key(project.organization, project.name)]
        for g in self._table.query(keys.team_projects_index(project.organization), index="gsi1"):
            if g["project_id"] == project.id:
                doomed += [(g["pk"], g["sk"]), keys.grant_claim_key(project.id, g["team_id"])]
        self._table.batch_delete(doomed)
        grants.forget()
