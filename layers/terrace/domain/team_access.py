"""Team access grants to a workspace or a project, with TFC's fields for each fixed workspace level."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# TFC's fields for each fixed workspace access level (what `/team-workspaces` shows for it).
WORKSPACE_FIELDS: dict[str, dict[str, Any]] = {
    "read": {"runs": "read", "variables": "read", "state-versions": "read", "sentinel-mocks": "none",
             "workspace-locking": False, "run-tasks": False},
    "plan": {"runs": "plan", "variables": "read", "state-versions": "read", "sentinel-mocks": "none",
             "workspace-locking": False, "run-tasks": False},
    "write": {"runs": "apply", "variables": "write", "state-versions": "write", "sentinel-mocks": "read",
              "workspace-locking": True, "run-tasks": False},
    "admin": {"runs": "apply", "variables": "write", "state-versions": "write", "sentinel-mocks": "read",
              "workspace-locking": True, "run-tasks": True},
}  # fmt: skip

CUSTOM_DEFAULTS = {"runs": "read", "variables": "none", "state-versions": "none", "sentinel-mocks": "none",
                   "workspace-locking": False, "run-tasks": False}  # fmt: skip


@dataclass(frozen=True)
class Grant:
    id: str
    kind: str  # "workspace" or "project"
    team_id: str
    target_id: str  # workspace or project id
    organization: str
    access: str
    fields: dict[str, Any]  # workspace grants: runs, variables...; project grants: project-access/workspace-access

    @property
    def workspace_fields(self) -> dict[str, Any]:
        return dict(WORKSPACE_FIELDS.get(self.access) or {**CUSTOM_DEFAULTS, **self.fields})
