"""Run tasks (HCP Terraform's `tasks`, `workspace-tasks` and `task-results`; go-tfe `run_task.go`,
`workspace_run_task.go`, `task_result.go`).

An organization's run task names an external service (its URL, an optional HMAC key that signs each request,
enabled or not); a workspace attaches it (`workspace-tasks`) at one or more stages with an enforcement level. When a
run of that workspace reaches a stage, each attached enabled task gets a task result, delivered to the service,
which answers later through the result's callback: `running`, then `passed` or `failed`. A mandatory task that fails
or does not answer in time stops the run; an advisory one is reported only.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

from terrace.domain.errors import Invalid
from terrace.domain.task_stages import STAGES

ADVISORY, MANDATORY = "advisory", "mandatory"
ENFORCEMENT_LEVELS = (ADVISORY, MANDATORY)
CATEGORY = "task"

# task result statuses (go-tfe TaskResultStatus)
TR_PENDING, TR_RUNNING, TR_PASSED, TR_FAILED = "pending", "running", "passed", "failed"
TR_ERRORED, TR_UNREACHABLE = "errored", "unreachable"
TR_FINAL = frozenset({TR_PASSED, TR_FAILED, TR_ERRORED, TR_UNREACHABLE})
CALLBACK_STATUSES = (TR_RUNNING, TR_PASSED, TR_FAILED)

TASK_TIMEOUT_S = 600  # HCP Terraform's: a task that has not answered in 10 minutes failed
NAME_MAX, URL_MAX, DESCRIPTION_MAX, HMAC_KEY_MAX = 128, 2048, 2000, 1024
MESSAGE_MAX, OUTCOMES_MAX_BYTES, OUTCOMES_MAX = 2000, 64 * 1024, 100


@dataclass
class RunTask:
    id: str  # task-...
    organization: str  # the organization's key
    name: str
    url: str
    created_at: str
    description: str = ""
    category: str = CATEGORY
    enabled: bool = True
    hmac_ciphertext: str | None = None  # the HMAC key, encrypted; never shown
    # HCP's global run task: {enabled, stages, enforcement-level}, applied to every workspace of the organization
    # (task_results.py) while enabled and the organization is entitled to global run tasks; None: never set
    global_configuration: dict[str, Any] | None = None
    version: int = 1

    def global_at(self, stage: str) -> bool:
        """Whether, set global and enabled, it applies to every workspace's runs at `stage`."""
        config = self.global_configuration
        return bool(self.enabled and config and config.get("enabled") and stage in config.get("stages", ()))


@dataclass
class WorkspaceTask:
    id: str  # wstask-...
    organization: str
    workspace_id: str
    task_id: str
    enforcement_level: str
    stages: list[str]
    created_at: str
    version: int = 1


@dataclass
class TaskResult:
    id: str  # taskrs-...
    run_id: str
    organization: str
    workspace_id: str
    stage_id: str
    stage: str
    task_id: str
    task_name: str
    task_url: str
    workspace_task_id: str
    enforcement_level: str
    created_at: str
    updated_at: str
    status: str = TR_PENDING
    message: str = ""
    url: str | None = None
    outcomes: list[dict[str, Any]] = field(default_factory=list)
    status_timestamps: dict[str, str] = field(default_factory=dict)
    started_at_epoch: float | None = None  # when its request was queued (the time limit counts from here)
    token_id: str | None = None  # the access token given to the service (the callback's credential)
    attempts: int = 0
    version: int = 1

    def mark(self, status: str, at: str, message: str | None = None) -> None:
        self.status = status
        self.status_timestamps[f"{status}-at"] = at
        self.updated_at = at
        if message is not None:
            self.message = message

    @property
    def final(self) -> bool:
        return self.status in TR_FINAL

    @property
    def mandatory(self) -> bool:
        return self.enforcement_level == MANDATORY


def enforcement(value: Any, pointer: str = "/data/attributes/enforcement-level") -> str:
    if value not in ENFORCEMENT_LEVELS:
        raise Invalid(f"enforcement-level must be one of {', '.join(ENFORCEMENT_LEVELS)}", pointer=pointer)
    return str(value)


def stages_of(attrs: dict[str, Any], default: list[str] | None) -> list[str] | None:
    """`stages` (a list), or the deprecated single `stage` go-tfe still sends; None when neither is given."""
    if attrs.get("stages") is not None:
        value = attrs["stages"]
        if not isinstance(value, list) or not value or any(s not in STAGES for s in value):
            raise Invalid(f"stages must be a list of {', '.join(STAGES)}", pointer="/data/attributes/stages")
        return list(dict.fromkeys(value))
    if attrs.get("stage") is not None:
        if attrs["stage"] not in STAGES:
            raise Invalid(f"stage must be one of {', '.join(STAGES)}", pointer="/data/attributes/stage")
        return [attrs["stage"]]
    return default


def global_configuration(value: Any, current: dict[str, Any] | None) -> dict[str, Any]:
    """`global-configuration` (go-tfe's GlobalRunTaskOptions: each of enabled, stages, enforcement-level optional)
    over the task's current one; a new one is disabled, at post_plan, advisory until told otherwise."""
    pointer = "/data/attributes/global-configuration"
    if not isinstance(value, dict):
        raise Invalid("global-configuration must be an object: enabled, stages, enforcement-level", pointer=pointer)
    config = dict(current or {"enabled": False, "stages": ["post_plan"], "enforcement-level": ADVISORY})
    if value.get("enabled") is not None:
        if not isinstance(value["enabled"], bool):
            raise Invalid("global-configuration.enabled must be true or false", pointer=f"{pointer}/enabled")
        config["enabled"] = value["enabled"]
    if value.get("stages") is not None:
        try:
            config["stages"] = stages_of({"stages": value["stages"]}, None)
        except Invalid as exc:
            raise Invalid(f"global-configuration.{exc}", pointer=f"{pointer}/stages") from exc
    if value.get("enforcement-level") is not None:
        config["enforcement-level"] = enforcement(value["enforcement-level"], f"{pointer}/enforcement-level")
    return config


def outcomes_of(relationships: Any) -> list[dict[str, Any]] | None:
    """TFC's `relationships.outcomes.data`: task-result-outcomes (outcome-id, description, body, url, tags)."""
    if not isinstance(relationships, dict) or not isinstance(relationships.get("outcomes"), dict):
        return None
    data = relationships["outcomes"].get("data")
    if not isinstance(data, list) or len(data) > OUTCOMES_MAX:
        raise Invalid(f"outcomes must be a list of at most {OUTCOMES_MAX}", pointer="/data/relationships/outcomes")
    found = []
    for index, entry in enumerate(data):
        attrs = entry.get("attributes") if isinstance(entry, dict) else None
        if not isinstance(attrs, dict):
            raise Invalid("each outcome needs attributes", pointer=f"/data/relationships/outcomes/data/{index}")
        found.append({k: attrs.get(k) for k in ("outcome-id", "description", "body", "url", "tags") if k in attrs})
    if len(json.dumps(found)) > OUTCOMES_MAX_BYTES:
        raise Invalid(f"outcomes are larger than {OUTCOMES_MAX_BYTES} bytes", pointer="/data/relationships/outcomes")
    return found


def to_item(entity: RunTask | WorkspaceTask | TaskResult, **keys: str) -> dict[str, Any]:
    return {**dataclasses.asdict(entity), **keys}


def task_from_item(item: dict[str, Any]) -> RunTask:
    return RunTask(**{f.name: item[f.name] for f in dataclasses.fields(RunTask) if f.name in item})


def workspace_task_from_item(item: dict[str, Any]) -> WorkspaceTask:
    return WorkspaceTask(**{f.name: item[f.name] for f in dataclasses.fields(WorkspaceTask) if f.name in item})


def result_from_item(item: dict[str, Any]) -> TaskResult:
    return TaskResult(**{f.name: item[f.name] for f in dataclasses.fields(TaskResult) if f.name in item})
