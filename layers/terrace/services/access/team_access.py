"""Team access to workspaces (`team-workspaces`) and to projects (`team-projects`): one grant per
team and workspace or project, with TFC's levels and custom fields (`permissions.py` says what each allows)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from terrace.domain.errors import Invalid, NotFound
from terrace.domain.ids import looks_like, new_id
from terrace.domain.principal import Principal
from terrace.domain.projects import Project, default_project_id
from terrace.domain.team_access import WORKSPACE_FIELDS, Grant
from terrace.domain.teams import Team
from terrace.domain.workspace import Workspace
from terrace.services.access import grants
from terrace.services.access.authz import Action
from terrace.services.access.permissions import FIELD_CHOICES, PROJECT_LEVELS, WORKSPACE_LEVELS
from terrace.services.access.projects import ProjectService
from terrace.services.access.store_projects import ProjectStore
from terrace.services.access.teams import TeamService

PROJECT_ACCESS_CHOICES: dict[str, tuple[Any, ...]] = {"settings": ("read", "update", "delete"),
                                                      "teams": ("none", "read", "manage"),
                                                      "variable-sets": ("none", "read", "write")}  # fmt: skip
PROJECT_WS_CHOICES: dict[str, tuple[Any, ...]] = {
    "runs": ("read", "plan", "apply"), "sentinel-mocks": ("none", "read"),
    "state-versions": ("none", "read-outputs", "read", "write"), "variables": ("none", "read", "write"),
    **dict.fromkeys(("create", "locking", "delete", "move", "run-tasks"), (True, False)),
}  # fmt: skip


def _choices(values: Any, choices: dict[str, tuple[Any, ...]], pointer: str) -> dict[str, Any]:
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise Invalid("must be an object", pointer=pointer)
    for key, value in values.items():
        if key not in choices or value not in choices[key] or type(value) is not type(choices[key][0]):
            raise Invalid(
                f"{key} must be one of {', '.join(map(str, choices.get(key, ())))}", pointer=f"{pointer}/{key}"
            )
    return dict(values)


@dataclass(frozen=True)
class AccessPage:
    """A workspace's or a project's team access as the UI shows it: each grant with its team, and the teams of
    the organization the caller sees that have none yet (the ones a grant can be added for; not the owners team,
    which may do everything)."""

    grants: list[tuple[Grant, Team]]
    teams: list[Team]
    # a workspace's: what its project's grants give each team in it (changed on the project's page)
    project: Project | None = None
    inherited: list[tuple[Grant, Team]] = field(default_factory=list)


class WorkspaceReader(Protocol):
    """What team access needs of the workspaces area (`WorkspaceService.get`, wired in `wiring/access_services.py`):
    a workspace the caller may act on, as absent (`NotFound`) otherwise. A port, so that this area, below the
    workspaces area, imports nothing from it."""

    def get(self, principal: Principal, workspace_id: str, action: Action = ...) -> Workspace: ...


class TeamAccessService:
    def __init__(
        self, store: ProjectStore, teams: TeamService, workspaces: WorkspaceReader, projects: ProjectService
    ) -> None:
        self._store = store
        self._teams = teams
        self._workspaces = workspaces
        self._projects = projects

    # workspaces --------------------------------------------------------------------------
    def list_for_workspace(self, principal: Principal, workspace_id: str) -> list[Grant]:
        ws = self._workspaces.get(principal, workspace_id, Action.MANAGE_WORKSPACE_ACCESS)
        return [g for g in self._store.workspace_grants(ws.organization) if g.target_id == ws.id]

    def add_workspace(self, principal: Principal, team_id: str, workspace_id: str, attrs: dict[str, Any]) -> Grant:
        ws = self._workspaces.get(principal, workspace_id, Action.MANAGE_WORKSPACE_ACCESS)
        team = self._team_of(ws.organization, team_id)
        access, fields = self._workspace_level(attrs, None)
        grant = Grant(new_id("tws"), "workspace", team.id, ws.id, ws.organization, access, fields)
        return self._add(grant, f"team {team.name} has access already")

    def get(self, principal: Principal, grant_id: str, kind: str) -> Grant:
        prefix = "tws" if kind == "workspace" else "tprj"
        found = self._store.grant(grant_id, kind) if looks_like(grant_id, prefix) else None
        if found is None:
            raise NotFound(f"team access {grant_id} not found")
        grant = found
        try:
            if kind == "workspace":
                self._workspaces.get(principal, grant.target_id, Action.MANAGE_WORKSPACE_ACCESS)
            else:
                self._projects.get(principal, grant.target_id, Action.MANAGE_PROJECTS)
        except NotFound as exc:
            raise NotFound(f"team access {grant_id} not found") from exc
        return grant

    def update(self, principal: Principal, grant_id: str, kind: str, attrs: dict[str, Any]) -> Grant:
        grant = self.get(principal, grant_id, kind)
        if kind == "workspace":
            access, fields = self._workspace_level(attrs, grant)
        else:
            access, project_access, workspace_access = self._project_level(attrs, grant)
            fields = {"project-access": project_access, "workspace-access": workspace_access}
        updated = self._store.update_grant(grant, access, fields)
        grants.forget()
        return updated

    def remove(self, principal: Principal, grant_id: str, kind: str) -> None:
        self._store.remove_grant(self.get(principal, grant_id, kind))
        grants.forget()

    # projects ----------------------------------------------------------------------------
    def list_for_project(self, principal: Principal, project_id: str) -> list[Grant]:
        project = self._projects.get(principal, project_id, Action.MANAGE_PROJECTS)
        return [g for g in self._store.project_grants(project.organization) if g.target_id == project.id]

    def add_project(self, principal: Principal, team_id: str, project_id: str, attrs: dict[str, Any]) -> Grant:
        project = self._projects.get(principal, project_id, Action.MANAGE_PROJECTS)
        team = self._team_of(project.organization, team_id)
        access, project_access, workspace_access = self._project_level(attrs, None)
        fields = {"project-access": project_access, "workspace-access": workspace_access}
        grant = Grant(new_id("tprj"), "project", team.id, project.id, project.organization, access, fields)
        return self._add(grant, f"team {team.name} has access already")

    # the UI's pages ------------------------------------------------------------------------
    def workspace_page(self, principal: Principal, workspace_id: str) -> AccessPage:
        """The workspace's grants, and those of its project, which every workspace of the project inherits."""
        ws = self._workspaces.get(principal, workspace_id, Action.MANAGE_WORKSPACE_ACCESS)
        page = self._page(principal, self.list_for_workspace(principal, workspace_id), workspace_id, "workspace")
        project = self._projects.load(ws.project_id or default_project_id(ws.organization))
        known = {team.id: team for _, team in page.grants} | {team.id: team for team in page.teams}
        inherited = [
            (g, known.get(g.team_id) or self._teams.load(g.team_id))
            for g in self._store.project_grants(ws.organization)
            if g.target_id == project.id
        ]
        return replace(page, project=project, inherited=sorted(inherited, key=lambda pair: pair[1].name.lower()))

    def project_page(self, principal: Principal, project_id: str) -> AccessPage:
        return self._page(principal, self.list_for_project(principal, project_id), project_id, "project")

    def _page(self, principal: Principal, found: list[Grant], target_id: str, kind: str) -> AccessPage:
        """`found` (the grants of `target_id`, read with the permission check) with their teams."""
        organization = (
            self._workspaces.get(principal, target_id, Action.MANAGE_WORKSPACE_ACCESS).organization
            if kind == "workspace"
            else self._projects.get(principal, target_id, Action.MANAGE_PROJECTS).organization
        )
        org = self._teams.organization_by_key(principal, organization)
        everyone = {t.id: t for t in self._teams.list_of(principal, org)}
        with_team = [(g, everyone.get(g.team_id) or self._teams.load(g.team_id)) for g in found]
        granted = {g.team_id for g in found}
        return AccessPage(
            sorted(with_team, key=lambda pair: pair[1].name.lower()),
            sorted(
                (t for t in everyone.values() if t.id not in granted and not t.owners), key=lambda t: t.name.lower()
            ),
        )

    # helpers -----------------------------------------------------------------------------
    def _add(self, grant: Grant, taken: str) -> Grant:
        added = self._store.add_grant(grant, taken)
        grants.forget()
        return added

    def _team_of(self, organization: str, team_id: Any) -> Any:
        if not isinstance(team_id, str):
            raise Invalid("relationships.team is required", pointer="/data/relationships/team")
        try:
            team = self._teams.load(team_id)
        except NotFound:
            team = None
        if team is None or team.organization != organization:
            raise NotFound(f"team {team_id} not found")
        return team

    @staticmethod
    def _workspace_level(attrs: dict[str, Any], current: Grant | None) -> tuple[str, dict[str, Any]]:
        access = attrs.get("access", current.access if current else None)
        if access not in WORKSPACE_LEVELS:
            raise Invalid(f"access must be one of {', '.join(WORKSPACE_LEVELS)}", pointer="/data/attributes/access")
        given = _choices({k: v for k, v in attrs.items() if k in FIELD_CHOICES}, FIELD_CHOICES, "/data/attributes")
        if access != "custom":
            for key in given:
                if given[key] != WORKSPACE_FIELDS[access][key]:
                    label = key.replace("-", " ").capitalize()
                    raise Invalid(
                        f"{label} is read-only when access level is '{access}'; use the 'custom' access level to "
                        "set this attribute.",
                        pointer=f"/data/attributes/{key}",
                    )
            return access, {}
        return access, {**(current.fields if current and current.access == "custom" else {}), **given}

    @staticmethod
    def _project_level(attrs: dict[str, Any], current: Grant | None) -> tuple[str, dict[str, Any], dict[str, Any]]:
        access = attrs.get("access", current.access if current else None)
        if access not in PROJECT_LEVELS:
            raise Invalid(f"access must be one of {', '.join(PROJECT_LEVELS)}", pointer="/data/attributes/access")
        pa = _choices(attrs.get("project-access"), PROJECT_ACCESS_CHOICES, "/data/attributes/project-access")
        wa = _choices(attrs.get("workspace-access"), PROJECT_WS_CHOICES, "/data/attributes/workspace-access")
        if access != "custom":
            return access, {}, {}
        old = current.fields if current and current.access == "custom" else {}
        return access, {**old.get("project-access", {}), **pa}, {**old.get("workspace-access", {}), **wa}
