"""Agent pools, their agents and the rules that bind workspaces to them (HCP Terraform's `agent-pools`, `agents`).

A pool belongs to one organization. It serves every workspace of it (`organization_scoped`) or only the workspaces
it allows, by name or through their project. Its agents (`terrace agent` processes holding one of its tokens) take
the jobs of the workspaces whose execution mode is `agent` with this pool, from the pool's own job queue
(`queue_key`): Terrace's runners never see that queue, and an agent sees no other.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from terrace.domain.errors import Invalid

if TYPE_CHECKING:
    from terrace.domain.organizations import Organization
    from terrace.domain.projects import Project
    from terrace.domain.workspace import Workspace

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._-]{0,89}\Z")
AGENT_NAME_MAX = 255
IP_MAX = 64
ALLOWED_MAX = 1000  # allowed workspaces or projects of one pool (one item)

# An agent's status (TFC): idle or busy while it pings; unknown when its pings stop; exited when it said goodbye;
# errored when it stayed silent long enough to be given up.
IDLE, BUSY, UNKNOWN, EXITED, ERRORED = "idle", "busy", "unknown", "exited", "errored"
STATUSES = (IDLE, BUSY, UNKNOWN, EXITED, ERRORED)
DEFAULT_POOL_SETTING = "default-agent-pool-id"  # an organization's default pool, in `Organization.settings`
UNKNOWN_AFTER_S = 60  # a live agent pings at least every 20 s (its long-poll) or every job heartbeat
ERRORED_AFTER_S = 600


@dataclass(frozen=True)
class AgentPool:
    id: str
    organization: str
    name: str
    created_at: str
    organization_scoped: bool = True
    allowed_workspaces: tuple[str, ...] = ()
    allowed_projects: tuple[str, ...] = ()
    version: int = 1
    excluded_workspaces: tuple[str, ...] = ()  # never served, whatever allows them (HCP's `excluded-workspaces`)

    def allows(self, workspace_id: str, project_id: str) -> bool:
        """Whether a workspace (of the pool's organization) may run its jobs on this pool."""
        if workspace_id in self.excluded_workspaces:
            return False
        if self.organization_scoped:
            return True
        return workspace_id in self.allowed_workspaces or project_id in self.allowed_projects


@dataclass(frozen=True)
class Agent:
    id: str
    pool_id: str
    organization: str
    name: str
    ip_address: str
    status: str
    last_ping_at: str
    last_ping_epoch: float
    token_id: str
    version: int = 1
    extra: dict[str, Any] = field(default_factory=dict)

    def status_at(self, now: float) -> str:
        """The status as seen now: a silent idle or busy agent is unknown, then errored (computed, never written)."""
        if self.status in (EXITED, ERRORED):
            return self.status
        silent = now - self.last_ping_epoch
        if silent > ERRORED_AFTER_S:
            return ERRORED
        if silent > UNKNOWN_AFTER_S:
            return UNKNOWN
        return self.status


def queue_key(organization: str, pool_id: str) -> str:
    """The job queue partition of a pool (the organization's own queue is keyed by the organization's key, which
    never holds a `#`): runners read their organization's, agents their pool's, never each other's."""
    return f"{organization}#agent-pool#{pool_id}"


def inherited(org: Organization, project: Project | None = None) -> tuple[str, str | None]:
    """The execution mode and agent pool a workspace that does not overwrite them inherits: its project's defaults
    when the project sets them, else its organization's."""
    if project is not None and project.default_execution_mode:
        return project.default_execution_mode, project.default_agent_pool_id
    return org.default_execution_mode, str(org.settings.get(DEFAULT_POOL_SETTING) or "") or None


def execution_mode_of(ws: Workspace, org: Organization, project: Project | None = None) -> str:
    return ws.effective_execution_mode(inherited(org, project)[0])


def pool_of(ws: Workspace, org: Organization, project: Project | None = None) -> str | None:
    """The pool a workspace's runs execute on: its own when it overwrote the execution mode, else its project's or
    organization's default; None unless that mode is `agent`."""
    mode, pool = inherited(org, project)
    if ws.effective_execution_mode(mode) != "agent":
        return None
    return ws.agent_pool_id if ws.overwrites_execution_mode else pool


def check_name(value: Any, pointer: str = "/data/attributes/name") -> str:
    if not isinstance(value, str) or not NAME_RE.match(value):
        raise Invalid(
            "name is required: 1 to 90 letters, digits, spaces, '.', '_' or '-', starting with a letter or digit",
            pointer=pointer,
        )
    return value


def check_bool(value: Any, key: str) -> bool:
    if not isinstance(value, bool):
        raise Invalid(f"{key} must be true or false", pointer=f"/data/attributes/{key}")
    return value


def check_agent_name(value: Any) -> str:
    if value is None or value == "":
        return ""
    if not isinstance(value, str) or len(value) > AGENT_NAME_MAX or any(ord(c) < 32 for c in value):
        raise Invalid(f"an agent's name is at most {AGENT_NAME_MAX} printable characters", pointer="/name")
    return value
