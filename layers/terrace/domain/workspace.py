"""The workspace aggregate as stored, plus its lock."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from terrace.domain import tool_versions
from terrace.domain.errors import Invalid
from terrace.domain.limits import WORKING_DIRECTORY_MAX

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,89}$")
EXECUTION_MODES = ("remote", "local", "agent")


def workspace_key(workspace_id: str) -> tuple[str, str]:
    return workspace_id, "ws"


def name_claim_key(organization: str, name: str) -> tuple[str, str]:
    return f"org#{organization}#wsnames", name


def validate_name(name: Any) -> str:
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise Invalid(
            "name must start with a letter or digit and hold only letters, digits, - and _ (max 90)",
            pointer="/data/attributes/name",
        )
    return name


def validate_terraform_version(version: Any) -> str:
    """A version (`1.9.4`), `latest`, or a constraint (`~> 1.0`, `>= 1.5, < 2`): runs use the newest
    binary of the runners' catalog that satisfies it."""
    if not isinstance(version, str) or len(version) > 64:
        raise Invalid(
            "terraform-version must be 'latest', a version like 1.6.0 or a constraint like '~> 1.6'",
            pointer="/data/attributes/terraform-version",
        )
    return tool_versions.check_constraint(version.removeprefix("v"))


def validate_working_directory(value: Any) -> str:
    """A path relative to the configuration's root: no absolute path, no `..` segment, bounded length."""
    value = "" if value is None else value
    pointer = "/data/attributes/working-directory"
    if not isinstance(value, str) or len(value) > WORKING_DIRECTORY_MAX:
        raise Invalid(
            f"working-directory must be a string of at most {WORKING_DIRECTORY_MAX} characters", pointer=pointer
        )
    segments = value.replace("\\", "/").split("/")
    if value.startswith(("/", "\\")) or ".." in segments or "\0" in value or (len(value) > 1 and value[1] == ":"):
        raise Invalid("working-directory must be a relative path inside the configuration (no '..')", pointer=pointer)
    return value


@dataclass(frozen=True)
class WorkspaceLock:
    holder: str  # Principal.lock_holder of who took it, e.g. "user:user-abc" or "run:run-xyz"
    username: str
    reason: str
    created_at: str
    lock_id: str | None = None  # the client's lock ID (http backend LockInfo.ID)
    info: dict[str, Any] | None = None  # the client's LockInfo, returned verbatim on conflicts

    @property
    def holder_kind(self) -> str:
        return self.holder.split(":", 1)[0]

    @property
    def holder_id(self) -> str:
        return self.holder.split(":", 1)[1]

    def to_item(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}

    @classmethod
    def from_item(cls, item: dict[str, Any] | None) -> WorkspaceLock | None:
        return cls(**item) if item else None


@dataclass(frozen=True)
class Workspace:
    id: str
    name: str
    organization: str
    created_at: str
    updated_at: str
    version: int
    description: str = ""
    execution_mode: str = "remote"
    auto_apply: bool = False
    auto_apply_run_trigger: bool = False  # runs its run triggers queue apply without confirmation
    terraform_version: str = "latest"
    working_directory: str = ""
    global_remote_state: bool = False
    queue_all_runs: bool = False
    speculative_enabled: bool = True
    allow_destroy_plan: bool = True
    tag_names: tuple[str, ...] = ()
    tag_bindings: tuple[tuple[str, str], ...] = ()  # key-value tags (TFC `tag-bindings`), sorted by key
    remote_state_consumers: tuple[str, ...] = ()  # workspace ids that may read this state (terraform_remote_state)
    # Whether `execution_mode` was set on the workspace (TFC `setting-overwrites`); otherwise the organization's
    # default applies. None: stored before the flag existed, overwritten when the mode is not "remote".
    execution_mode_overwritten: bool | None = None
    lock: WorkspaceLock | None = None
    current_state_version_id: str | None = None
    state_serial: int | None = None
    state_lineage: str | None = None
    state_md5: str | None = None
    current_run_id: str | None = None
    latest_run_id: str | None = None
    resource_count: int = 0
    runs_count: int = 0
    created_ns: int = 0  # creation time in ns: orders workspaces created within the same millisecond
    project_id: str | None = None  # None: the organization's Default Project
    agent_pool_id: str | None = None  # the pool its runs execute on, in the `agent` execution mode it overwrote
    auto_destroy_at: str | None = None  # when its resources are destroyed (`domain/auto_destroy.py`)
    auto_destroy_activity_duration: str | None = None  # "14d", "3h": auto_destroy_at follows its last activity
    # its current health assessment, for badges: {result_id, drifted, checks_failing, succeeded}
    # (`services/runs/assessments.py`)
    health: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def locked(self) -> bool:
        return self.lock is not None

    @property
    def overwrites_execution_mode(self) -> bool:
        if self.execution_mode_overwritten is None:
            return self.execution_mode != "remote"
        return self.execution_mode_overwritten

    def effective_execution_mode(self, organization_default: str) -> str:
        """The mode runs use: the workspace's own when it overwrote it, else its organization's default."""
        return self.execution_mode if self.overwrites_execution_mode else organization_default


_SIMPLE = (
    "description",
    "execution_mode",
    "auto_apply",
    "auto_apply_run_trigger",
    "terraform_version",
    "working_directory",
    "global_remote_state",
    "queue_all_runs",
    "speculative_enabled",
    "allow_destroy_plan",
    "current_state_version_id",
    "state_serial",
    "state_lineage",
    "state_md5",
    "current_run_id",
    "latest_run_id",
    "resource_count",
    "runs_count",
    "created_ns",
    "execution_mode_overwritten",
    "project_id",
    "agent_pool_id",
    "auto_destroy_at",
    "auto_destroy_activity_duration",
    "health",
)


def from_item(item: dict[str, Any]) -> Workspace:
    if "auto_apply_run_trigger" not in item:  # stored before it was a field: kept as sent, in `extra`
        item = {**item, "auto_apply_run_trigger": (item.get("extra") or {}).get("auto-apply-run-trigger") is True}
    return Workspace(
        id=item["id"],
        name=item["name"],
        organization=item["organization"],
        created_at=item["created_at"],
        updated_at=item.get("updated_at", item["created_at"]),
        version=int(item["version"]),
        tag_names=tuple(item.get("tag_names", [])),
        tag_bindings=tuple((str(k), str(v)) for k, v in item.get("tag_bindings", [])),
        remote_state_consumers=tuple(item.get("remote_state_consumers", [])),
        lock=WorkspaceLock.from_item(item.get("lock")),
        extra=dict(item.get("extra", {})),
        **{name: item[name] for name in _SIMPLE if item.get(name) is not None},
    )


def to_item(ws: Workspace) -> dict[str, Any]:
    pk, sk = workspace_key(ws.id)
    item: dict[str, Any] = {
        "pk": pk,
        "sk": sk,
        "id": ws.id,
        "name": ws.name,
        "organization": ws.organization,
        "created_at": ws.created_at,
        "updated_at": ws.updated_at,
        "version": ws.version,
        "tag_names": list(ws.tag_names),
        "tag_bindings": [list(pair) for pair in ws.tag_bindings],
        "remote_state_consumers": list(ws.remote_state_consumers),
        "extra": ws.extra,
        "gsi1pk": f"org#{ws.organization}#workspaces",
        "gsi1sk": ws.name,
    }
    for name in _SIMPLE:
        value = getattr(ws, name)
        if value is not None:
            item[name] = value
    if ws.lock is not None:
        item["lock"] = ws.lock.to_item()
    return item


@dataclass(frozen=True)
class WorkspaceView:
    id: str
    global_remote_state: bool
    project_id: str | None = None  # None: the organization's Default Project
    remote_state_consumers: frozenset[str] = frozenset()

    def shares_state_with(self, workspace_id: str | None) -> bool:
        return self.global_remote_state or (workspace_id is not None and workspace_id in self.remote_state_consumers)
