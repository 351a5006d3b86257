"""Storage of projects and of teams' access to workspaces and projects (part of the access store, `store.py`; keys
in `store_keys.py`).

A project `prj-…`/`prj` is listed under gsi1 `org#<key>#projects` by lower-cased name, its name claimed under
`org#<key>#projectnames`. A grant `tws-…`/`tws` (a workspace's) or `tprj-…`/`tprj` (a project's) is listed under gsi1
`org#<key>#team-workspaces` (`team-projects`) by `<target>#<team>`; one per team and target, claimed under
`<target>#team-grants`/`<team>`."""

from __future__ import annotations

from typing import Any

from terrace.adapters.table import ConditionFailed, Delete, Put, Table, WriteOp
from terrace.domain import clock
from terrace.domain.errors import Conflict
from terrace.domain.projects import Project
from terrace.domain.team_access import Grant
from terrace.services.access import store_keys as keys
from terrace.services.access.store_teams import grant_keys_of

GRANT_SORT_KEYS = {"workspace": "tws", "project": "tprj"}


def project_from_item(item: dict[str, Any]) -> Project:
    return Project(
        item["id"], item["name"], item["organization"], item.get("description", ""), item["created_at"],
        int(item["version"]), tuple((str(k), str(v)) for k, v in item.get("tag_bindings", [])),
        item.get("default_execution_mode"), item.get("default_agent_pool_id"),
        item.get("auto_destroy_activity_duration"),
    )  # fmt: skip


SETTINGS = ("tag_bindings", "default_execution_mode", "default_agent_pool_id", "auto_destroy_activity_duration")


def _settings(project: Project) -> dict[str, Any]:
    """The project's settings as item attributes (a setting left to its organization is absent)."""
    found: dict[str, Any] = {}
    if project.tag_bindings:
        found["tag_bindings"] = [list(pair) for pair in project.tag_bindings]
    for name in SETTINGS[1:]:
        if getattr(project, name) is not None:
            found[name] = getattr(project, name)
    return found


def project_items(organization: str, project_id: str, name: str, description: str = "") -> list[dict[str, Any]]:
    """The project and its name claim."""
    pk, sk = keys.project_key(project_id)
    npk, nsk = keys.project_name_key(organization, name)
    project = {"pk": pk, "sk": sk, "id": project_id, "organization": organization, "name": name,
               "description": description, "created_at": clock.now_iso(),
               "gsi1pk": keys.projects_index(organization), "gsi1sk": name.lower(), "version": 1}  # fmt: skip
    return [project, {"pk": npk, "sk": nsk, "project_id": project_id}]


def grant_from_item(item: dict[str, Any]) -> Grant:
    if item["sk"] == "tws":
        return Grant(item["id"], "workspace", item["team_id"], item["workspace_id"], item["organization"],
                     item["access"], dict(item.get("fields", {})))  # fmt: skip
    fields = {"project-access": item.get("project_access", {}), "workspace-access": item.get("workspace_access", {})}
    return Grant(
        item["id"], "project", item["team_id"], item["project_id"], item["organization"], item["access"], fields
    )


def _grant_fields(kind: str, fields: dict[str, Any]) -> dict[str, Any]:
    if kind == "workspace":
        return {"fields": fields}
    return {"project_access": fields["project-access"], "workspace_access": fields["workspace-access"]}


def grant_to_item(grant: Grant) -> dict[str, Any]:
    if grant.kind == "workspace":
        target, index = {"workspace_id": grant.target_id}, keys.team_workspaces_index(grant.organization)
    else:
        target, index = {"project_id": grant.target_id}, keys.team_projects_index(grant.organization)
    return {"pk": grant.id, "sk": GRANT_SORT_KEYS[grant.kind], "team_id": grant.team_id, **target,
            "organization": grant.organization, "access": grant.access, **_grant_fields(grant.kind, grant.fields),
            "version": 1, "gsi1pk": index, "gsi1sk": f"{grant.target_id}#{grant.team_id}", "id": grant.id}  # fmt: skip


class ProjectStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    # projects ----------------------------------------------------------------------------
    def project(self, project_id: str) -> Project | None:
        item = self._table.get(*keys.project_key(project_id))
        return project_from_item(item) if item else None

    def projects_of(self, organization: str) -> list[Project]:
        """The organization's projects, by lower-cased name."""
        return [project_from_item(i) for i in self._table.query(keys.projects_index(organization), index="gsi1")]

    def create_project(self, project: Project, taken: str) -> Project:
        """A new project (its id, organization, name, description and settings) with its name claim."""
        items = project_items(project.organization, project.id, project.name, project.description)
        items[0].update(_settings(project))
        try:
            self._table.transact([Put(item, if_absent=True) for item in items])
        except ConditionFailed as exc:
            raise Conflict(taken) from exc
        return project_from_item(items[0])

    def update_project(self, project: Project, updated: Project) -> Project:
        """`project` becomes `updated` (a new name moves its claim), over the version read."""
        item = self._table.get(*keys.project_key(project.id))
        assert item is not None
        ops: list[WriteOp] = []
        if updated.name != project.name:
            npk, nsk = keys.project_name_key(project.organization, updated.name)
            ops += [Put({"pk": npk, "sk": nsk, "project_id": project.id}, if_absent=True),
                    Delete(*keys.project_name_key(project.organization, project.name))]  # fmt: skip
            item.update(name=updated.name, gsi1sk=updated.name.lower())
        item["description"] = updated.description
        for name in SETTINGS:
            item.pop(name, None)
        item.update(_settings(updated))
        item["version"] = project.version + 1
        try:
            self._table.transact([Put(item, if_version=project.version), *ops])
        except ConditionFailed as exc:
            raise Conflict("a project of that name exists, or the project changed; retry") from exc
        return project_from_item(item)

    def delete_project(self, project: Project) -> None:
        """The project, its name claim and the teams' grants on it."""
        doomed = [keys.project_key(project.id), keys.project_name_key(project.organization, project.name)]
        grants = self._table.query(keys.team_projects_index(project.organization), index="gsi1")
        doomed += grant_keys_of([g for g in grants if g["project_id"] == project.id], "project_id")
        self._table.batch_delete(doomed)

    # team access -------------------------------------------------------------------------
    def workspace_grants(self, organization: str) -> list[Grant]:
        """Every team-workspace grant of the organization, by workspace then team."""
        items = self._table.query(keys.team_workspaces_index(organization), index="gsi1")
        return [grant_from_item(i) for i in items]

    def project_grants(self, organization: str) -> list[Grant]:
        """Every team-project grant of the organization, by project then team."""
        return [grant_from_item(i) for i in self._table.query(keys.team_projects_index(organization), index="gsi1")]

    def grant(self, grant_id: str, kind: str) -> Grant | None:
        item = self._table.get(grant_id, GRANT_SORT_KEYS[kind])
        return grant_from_item(item) if item else None

    def add_grant(self, grant: Grant, taken: str) -> Grant:
        """A new grant with its claim (one per team and target); Conflict(`taken`) when the team has one."""
        pk, sk = keys.grant_claim_key(grant.target_id, grant.team_id)
        item = grant_to_item(grant)
        try:
            self._table.transact([Put({"pk": pk, "sk": sk, "grant_id": grant.id}, if_absent=True),
                                  Put(item, if_absent=True)])  # fmt: skip
        except ConditionFailed as exc:
            raise Conflict(taken) from exc
        return grant_from_item(item)

    def update_grant(self, grant: Grant, access: str, fields: dict[str, Any]) -> Grant:
        """The grant's new level and fields, over the version read."""
        item = self._table.get(grant.id, GRANT_SORT_KEYS[grant.kind])
        assert item is not None
        item["access"] = access
        item.update(_grant_fields(grant.kind, fields))
        version = int(item.get("version", 1))
        item["version"] = version + 1
        try:
            self._table.put(item, if_version=version)
        except ConditionFailed as exc:
            raise Conflict("team access changed concurrently; retry") from exc
        return grant_from_item(item)

    def remove_grant(self, grant: Grant) -> None:
        self._table.transact([Delete(grant.id, GRANT_SORT_KEYS[grant.kind]),
                              Delete(*keys.grant_claim_key(grant.target_id, grant.team_id))])  # fmt: skip
