"""The workspace aggregate, plus its lock (stored by `services/workspaces/store.py`)."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from terrace.domain import clock, tool_versions
from terrace.domain.errors import Invalid
from terrace.domain.ids import new_id
from terrace.domain.limits import WORKING_DIRECTORY_MAX

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,89}\Z")
EXECUTION_MODES = ("remote", "local", "agent")


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
    # "terraform" | "opentofu" (`iac-platform`); "": stored before workspaces had a tool, its runs resolve as they
    # did (the deployment's default tool first: `ToolVersionService.tool_for`)
    tool: str = ""
    working_directory: str = ""
    global_remote_state: bool = False
    project_remote_state: bool = False  # its state is shared with the workspaces of its project (not with both)
    queue_all_runs: bool = False
    speculative_enabled: bool = True
    allow_destroy_plan: bool = True
    tag_names: tuple[str, ...] = ()
    tag_bindings: tuple[tuple[str, str], ...] = ()  # key-value tags (TFC `tag-bindings`), in the order given
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
    # the registry module whose test workspace this is (`domain/module_tests.py`): never listed nor named, reached
    # only through the module's test runs and test variables, by those who manage the organization's modules
    module_id: str | None = None
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


def new_workspace(
    name: str,
    organization: str,
    execution_mode: str,
    *,
    tag_names: tuple[str, ...],
    tag_bindings: tuple[tuple[str, str], ...],
    project_id: str | None,
    global_remote_state: bool,
) -> Workspace:
    """A workspace created now (version 1) in its organization's default execution mode, which it does not
    overwrite."""
    now = clock.now_iso()
    return Workspace(
        id=new_id("ws"),
        name=name,
        organization=organization,
        created_at=now,
        updated_at=now,
        version=1,
        execution_mode=execution_mode,
        execution_mode_overwritten=False,
        created_ns=time.time_ns(),
        tag_names=tag_names,
        tag_bindings=tag_bindings,
        project_id=project_id,
        global_remote_state=global_remote_state,
    )


@dataclass(frozen=True)
class WorkspaceView:
    id: str
    global_remote_state: bool
    project_id: str | None = None  # None: the organization's Default Project
    remote_state_consumers: frozenset[str] = frozenset()
    project_remote_state: bool = False
    module_id: str | None = None  # a registry module's test workspace: its module's managers alone reach it

    def shares_state_with(self, workspace_id: str | None, project_of_reader: str | None = None) -> bool:
        """Whether a run of `workspace_id` (whose project is `project_of_reader`, when known) may read this state:
        every workspace with global sharing, its project's workspaces with project sharing, else its consumers."""
        if self.global_remote_state:
            return True
        if self.project_remote_state:
            return project_of_reader is not None and project_of_reader == self.project_id
        return workspace_id is not None and workspace_id in self.remote_state_consumers
