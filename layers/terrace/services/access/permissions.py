"""What team access grants: access levels as sets of actions, and a caller's grants in one organization.

Pure rules (no I/O). `services/access/grants.py` reads a caller's grants from the table; `authz.py`
decides with them. A user's permissions in an organization are the union of their teams' organization
access, project access (for the workspaces of a project) and workspace access; owners may do anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from terrace.services.access.actions import Action

WS_READ = frozenset(
    {Action.READ_WORKSPACE, Action.READ_RUNS, Action.READ_STATE, Action.READ_STATE_OUTPUTS, Action.READ_VARIABLES}
)
WS_PLAN = WS_READ | {Action.QUEUE_RUN}
WS_WRITE = WS_PLAN | {
    Action.APPLY_RUN,
    Action.CANCEL_RUN,
    Action.LOCK_WORKSPACE,
    Action.WRITE_VARIABLES,
    Action.WRITE_STATE,
    Action.DOWNLOAD_SENTINEL_MOCKS,
}
WS_ADMIN = WS_WRITE | {
    Action.UPDATE_WORKSPACE,
    Action.DELETE_WORKSPACE,
    Action.FORCE_UNLOCK,
    Action.MANAGE_WORKSPACE_ACCESS,
    Action.MANAGE_RUN_TRIGGERS,
    Action.MANAGE_WORKSPACE_RUN_TASKS,
    Action.MANAGE_NOTIFICATIONS,
}

WORKSPACE_LEVELS = ("read", "plan", "write", "admin", "custom")
PROJECT_LEVELS = ("read", "write", "maintain", "admin", "custom")

FIELD_CHOICES: dict[str, tuple[Any, ...]] = {
    "runs": ("read", "plan", "apply"),
    "variables": ("none", "read", "write"),
    "state-versions": ("none", "read-outputs", "read", "write"),
    "sentinel-mocks": ("none", "read"),
    "workspace-locking": (True, False),
    "run-tasks": (True, False),
}
ORG_ACCESS_KEYS = (
    "manage-policies",
    "manage-policy-overrides",
    "delegate-policy-overrides",  # HCP's 2025 key: accepted and kept; it grants nothing beyond what is listed here
    "manage-workspaces",
    "manage-vcs-settings",
    "manage-providers",
    "manage-modules",
    "manage-run-tasks",
    "manage-projects",
    "read-workspaces",
    "read-projects",
    "manage-membership",
    "manage-teams",
    "manage-organization-access",
    "access-secret-teams",
    "manage-agent-pools",
)


def custom_actions(fields: Mapping[str, Any]) -> frozenset[Action]:
    """The actions a `custom` workspace (or project workspace-access) grant gives."""
    actions = {Action.READ_WORKSPACE}
    runs = fields.get("runs", "read")
    actions |= {Action.READ_RUNS}
    if runs in ("plan", "apply"):
        actions.add(Action.QUEUE_RUN)
    if runs == "apply":
        actions |= {Action.APPLY_RUN, Action.CANCEL_RUN}
    variables = fields.get("variables", "none")
    if variables in ("read", "write"):
        actions.add(Action.READ_VARIABLES)
    if variables == "write":
        actions.add(Action.WRITE_VARIABLES)
    state = fields.get("state-versions", "none")
    if state in ("read-outputs", "read", "write"):
        actions.add(Action.READ_STATE_OUTPUTS)
    if state in ("read", "write"):
        actions.add(Action.READ_STATE)
    if state == "write":
        actions.add(Action.WRITE_STATE)
    if fields.get("sentinel-mocks") == "read":
        actions.add(Action.DOWNLOAD_SENTINEL_MOCKS)
    if fields.get("workspace-locking") or fields.get("locking"):
        actions.add(Action.LOCK_WORKSPACE)
    if fields.get("delete"):
        actions.add(Action.DELETE_WORKSPACE)
    if fields.get("run-tasks"):
        actions.add(Action.MANAGE_WORKSPACE_RUN_TASKS)
    return frozenset(actions)


def workspace_level_actions(access: str, fields: Mapping[str, Any]) -> frozenset[Action]:
    fixed = {"read": WS_READ, "plan": WS_PLAN, "write": WS_WRITE, "admin": WS_ADMIN}
    return fixed[access] if access in fixed else custom_actions(fields)


def project_level_actions(access: str, workspace_access: Mapping[str, Any]) -> frozenset[Action]:
    """What a project grant allows in each workspace of the project."""
    fixed = {"read": WS_READ, "write": WS_WRITE, "maintain": WS_ADMIN, "admin": WS_ADMIN}
    return fixed[access] if access in fixed else custom_actions(workspace_access)


def project_grant_creates(access: str, workspace_access: Mapping[str, Any]) -> bool:
    return access in ("maintain", "admin") or (access == "custom" and bool(workspace_access.get("create")))


@dataclass(frozen=True)
class Grants:
    """What one caller (a user through their teams, or a team token) holds in one organization."""

    member: bool
    owner: bool = False
    org_access: frozenset[str] = frozenset()
    projects: Mapping[str, frozenset[Action]] = field(default_factory=dict)
    project_admin: frozenset[str] = frozenset()
    creates_workspaces: bool = False
    workspaces: Mapping[str, frozenset[Action]] = field(default_factory=dict)

    def workspace_actions(self, workspace_id: str, project_id: str) -> frozenset[Action]:
        actions: frozenset[Action] = frozenset()
        if "manage-workspaces" in self.org_access:
            actions |= WS_ADMIN
        if "read-workspaces" in self.org_access:
            actions |= WS_READ
        if "manage-run-tasks" in self.org_access:
            actions |= {Action.MANAGE_WORKSPACE_RUN_TASKS}
        actions |= self.projects.get(project_id, frozenset())
        actions |= self.workspaces.get(workspace_id, frozenset())
        return actions


NOT_A_MEMBER = Grants(member=False)
OWNER = Grants(member=True, owner=True)


def combine(grants: list[Grants]) -> Grants:
    """The union of several teams' grants."""
    if not grants:
        return Grants(member=True)
    projects: dict[str, frozenset[Action]] = {}
    workspaces: dict[str, frozenset[Action]] = {}
    for g in grants:
        for key, actions in g.projects.items():
            projects[key] = projects.get(key, frozenset()) | actions
        for key, actions in g.workspaces.items():
            workspaces[key] = workspaces.get(key, frozenset()) | actions
    return Grants(
        member=True,
        owner=any(g.owner for g in grants),
        org_access=frozenset().union(*(g.org_access for g in grants)),
        projects=projects,
        project_admin=frozenset().union(*(g.project_admin for g in grants)),
        creates_workspaces=any(g.creates_workspaces for g in grants),
        workspaces=workspaces,
    )
