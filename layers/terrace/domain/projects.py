"""Projects: groups of workspaces. Every organization has a Default Project whose id is derived from
the organization; it cannot be deleted or renamed."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from terrace.domain.errors import Invalid


def default_project_id(organization: str) -> str:
    """The Default Project's id; workspaces without a project belong to it."""
    return "prj-" + hashlib.sha256(f"default#{organization}".encode()).hexdigest()[:16]


NAME_RE = re.compile(r"^[A-Za-z0-9 _-]{3,40}\Z")
DEFAULT_PROJECT = "Default Project"  # its name


@dataclass(frozen=True)
class Project:
    id: str
    name: str
    organization: str
    description: str
    created_at: str
    version: int
    tag_bindings: tuple[tuple[str, str], ...] = ()  # key-value tags its workspaces inherit
    default_execution_mode: str | None = None  # None: its workspaces inherit the organization's
    default_agent_pool_id: str | None = None  # with the `agent` default mode only
    auto_destroy_activity_duration: str | None = None  # a default for its workspaces ("14d", "3h")

    @property
    def is_default(self) -> bool:
        return self.id == default_project_id(self.organization)

    def execution_mode(self, organization_default: str) -> str:
        """The mode its workspaces inherit: its own default when it sets one, else its organization's."""
        return self.default_execution_mode or organization_default


def check_name(value: Any) -> str:
    if not isinstance(value, str) or not NAME_RE.match(value):
        raise Invalid(
            "Name may only contain letters, numbers, spaces, `-`, and `_`, and must be 3 to 40 characters long",
            pointer="/data/attributes/name",
        )
    return value


MODE, POOL, OVERWRITES = "default-execution-mode", "default-agent-pool-id", "setting-overwrites"
_MODES = ("remote", "local", "agent")


def _overwrites(attrs: dict[str, Any]) -> dict[str, bool]:
    given = attrs.get(OVERWRITES)
    if given is None:
        return {}
    if not isinstance(given, dict) or not all(isinstance(v, bool) for v in given.values()):
        raise Invalid("setting-overwrites must be an object of booleans", pointer=f"/data/attributes/{OVERWRITES}")
    found = {k: v for k, v in given.items() if k in ("default-execution-mode", "default-agent-pool")}
    if len(found) == 2 and len(set(found.values())) == 2:
        raise Invalid(
            "If agent-pool and execution-mode are both included in setting-overwrites, their values must be the same.",
            pointer=f"/data/attributes/{OVERWRITES}",
        )
    return found


def execution_settings(project: Project, attrs: dict[str, Any]) -> tuple[str | None, str | None]:
    """The project's own default execution mode and agent pool after an update (None: its organization's).

    HCP's rules: a mode sent overwrites (`setting-overwrites` false clears it, the project inherits again); a pool
    goes with the `agent` mode only, and that mode needs one; leaving the agent mode leaves its pool."""
    overwrites = _overwrites(attrs)
    mode, pool = project.default_execution_mode, project.default_agent_pool_id
    if MODE in attrs and attrs[MODE] is not None:
        if attrs[MODE] not in _MODES:
            raise Invalid("default-execution-mode must be remote, local or agent", pointer=f"/data/attributes/{MODE}")
        mode = str(attrs[MODE])
        pool = None if mode != "agent" else pool
    if POOL in attrs:
        value = attrs[POOL]
        if value is not None and not (isinstance(value, str) and 0 < len(value) <= 80):
            raise Invalid("default-agent-pool-id must be an agent pool id or null", pointer=f"/data/attributes/{POOL}")
        pool = value or None
    if overwrites and not any(overwrites.values()):
        return None, None  # the project defers to its organization again
    if mode is None:
        if pool:
            raise Invalid("Default agent pool must not be specified unless using 'agent' execution mode",
                          pointer=f"/data/attributes/{POOL}")  # fmt: skip
        return None, None
    if mode != "agent" and pool:
        raise Invalid("Default agent pool must not be specified unless using 'agent' execution mode",
                      pointer=f"/data/attributes/{POOL}")  # fmt: skip
    if mode == "agent" and not pool:
        raise Invalid("Default agent pool must be specified when using 'agent' execution mode",
                      pointer=f"/data/attributes/{POOL}")  # fmt: skip
    return mode, pool
