"""Workspace attributes as clients send them: which are stored as fields, which are kept as they are, and
their validation (TFC's names; unknown attributes are refused with the attribute named)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from terrace.domain import auto_destroy, hyok, limits, tool_versions
from terrace.domain import workspace as model
from terrace.domain.errors import Invalid
from terrace.domain.tags import tag_bindings
from terrace.domain.workspace import Workspace
from terrace.services.workspaces.repository_link import LinkedRepository

# API attribute -> (field, validator)
_BOOL = lambda key: lambda v: _require_bool(key, v)  # noqa: E731
UPDATABLE: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "description": ("description", lambda v: limits.text(v, "description", limits.DESCRIPTION_MAX)),
    "execution-mode": ("execution_mode", lambda v: _require_choice("execution-mode", v, model.EXECUTION_MODES)),
    "auto-apply": ("auto_apply", _BOOL("auto-apply")),
    "auto-apply-run-trigger": ("auto_apply_run_trigger", _BOOL("auto-apply-run-trigger")),
    "terraform-version": ("terraform_version", model.validate_terraform_version),
    tool_versions.TOOL_ATTRIBUTE: ("tool", tool_versions.check_tool),
    "working-directory": ("working_directory", model.validate_working_directory),
    "global-remote-state": ("global_remote_state", _BOOL("global-remote-state")),
    "project-remote-state": ("project_remote_state", _BOOL("project-remote-state")),
    "queue-all-runs": ("queue_all_runs", _BOOL("queue-all-runs")),
    "speculative-enabled": ("speculative_enabled", _BOOL("speculative-enabled")),
    "allow-destroy-plan": ("allow_destroy_plan", _BOOL("allow-destroy-plan")),
}
# Attributes clients send that Terrace accepts and keeps but does not act on yet.
ACCEPTED_EXTRA = (
    "file-triggers-enabled",
    "trigger-prefixes",
    "trigger-patterns",
    "hyok-enabled",  # Hold Your Own Key (`services/hyok/state_keys.py: secure_workspace`)
    "source-name",
    "source-url",
    "assessments-enabled",
    "structured-run-output-enabled",
    "operations",
)


def _require_bool(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise Invalid(f"{key} must be true or false", pointer=f"/data/attributes/{key}")
    return value


def _extra(key: str, value: Any) -> Any:
    """An accepted attribute Terrace keeps but does not act on: strings bounded, anything else by size."""
    if isinstance(value, str):
        return limits.text(value, key, limits.TEXT_ATTRIBUTE_MAX)
    return limits.bounded_json(value, key, limits.EXTRA_ATTRIBUTE_MAX_BYTES)


def _require_choice(key: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise Invalid(f"{key} must be one of {', '.join(choices)}", pointer=f"/data/attributes/{key}")
    return str(value)


def with_tool(attributes: dict[str, Any], client: str, tool_for: Callable[[str], str]) -> dict[str, Any]:
    """A new workspace's `iac-platform`: as given, else the tool of the CLI whose `cloud`/`remote` block creates it
    (`client`), else the tool its terraform-version resolves to (`latest`: the deployment's default tool)."""
    if attributes.get(tool_versions.TOOL_ATTRIBUTE) is not None:
        return attributes
    requested = attributes.get("terraform-version")
    tool = client or tool_for(requested if isinstance(requested, str) else "latest")
    return {**attributes, tool_versions.TOOL_ATTRIBUTE: tool}


def tag_names(names: list[Any]) -> list[str]:
    for name in names:
        if not isinstance(name, str) or not model.NAME_RE.match(name.replace(":", "-")):
            raise Invalid("tag names are letters, digits, -, _ and :", pointer="/data/relationships/tags")
    return [str(n).lower() for n in names]


def apply_attributes(ws: Workspace, attributes: dict[str, Any]) -> Workspace:
    changes: dict[str, Any] = {}
    extra = dict(ws.extra)
    for key, value in attributes.items():
        if key in UPDATABLE:
            field_name, validate = UPDATABLE[key]
            changes[field_name] = validate(value)
        elif key == "operations":
            changes["execution_mode"] = "remote" if _require_bool(key, value) else "local"
        elif key == "tag-names":
            changes["tag_names"] = tuple(tag_names(value if isinstance(value, list) else [value]))
        elif key == "tag-bindings":
            changes["tag_bindings"] = tag_bindings(value, "/data/attributes/tag-bindings")
        elif key == "agent-pool-id":
            if value is not None and not (isinstance(value, str) and len(value) <= 80):
                raise Invalid(
                    "agent-pool-id must be an agent pool id or null", pointer="/data/attributes/agent-pool-id"
                )
            changes["agent_pool_id"] = value or None
        elif key in (auto_destroy.AT, auto_destroy.DURATION):
            continue  # below: the two decide together
        elif key == "hyok-enabled":  # Hold Your Own Key: state and plans encrypted on agents with the customer's key
            extra[key] = hyok.check_enabling(key, value, ws.extra.get(key) is True)
        elif key == "assessments-enabled":  # health assessments (services/runs/assessments.py)
            extra[key] = _require_bool(key, value)
        elif key == "setting-overwrites":
            continue  # below: it decides whether the execution mode is inherited
        elif key == "vcs-repo" and isinstance(value, LinkedRepository):  # connected by the VCS area
            if value.shown is None:
                extra.pop(key, None)
            else:
                extra[key] = value.shown
        elif key in ACCEPTED_EXTRA:
            extra[key] = _extra(key, value)
        # anything else (`name`, handled by the caller; read-only attributes; an unlinked `vcs-repo`; unknown ones) is
        # ignored,
        # as TFC does: clients send back what they read and attributes newer than Terrace
    if "execution_mode" in changes:
        changes["execution_mode_overwritten"] = True
    at, duration = auto_destroy.decide(attributes, ws.auto_destroy_at, ws.auto_destroy_activity_duration)
    changes["auto_destroy_at"], changes["auto_destroy_activity_duration"] = at, duration
    overwrites = attributes.get("setting-overwrites")
    if overwrites is not None:
        if not isinstance(overwrites, dict) or not all(isinstance(v, bool) for v in overwrites.values()):
            raise Invalid(
                "setting-overwrites must be an object of booleans", pointer="/data/attributes/setting-overwrites"
            )
        if "execution-mode" in overwrites:
            changes["execution_mode_overwritten"] = _require_bool(
                "setting-overwrites.execution-mode", overwrites["execution-mode"]
            )
    updated = dataclasses.replace(ws, extra=extra, **changes)
    if updated.global_remote_state and updated.project_remote_state:
        raise Invalid("Project remote state cannot be enabled when global remote state sharing is enabled",
                      pointer="/data/attributes/project-remote-state")  # fmt: skip
    if "agent_pool_id" not in changes and (updated.execution_mode != "agent" or not updated.overwrites_execution_mode):
        updated = dataclasses.replace(updated, agent_pool_id=None)  # leaving the agent mode leaves its pool
    return updated
