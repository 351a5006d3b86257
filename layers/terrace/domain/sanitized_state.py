"""The sanitized copy of a state (Hold Your Own Key): what the server may read of a workspace whose state is
encrypted with a customer's key (`docs/features/hyok.md`). The agent that encrypts the state makes it before the
upload; the server parses it for outputs, the resource index, the explorer and the UI, and never sees the rest.

Redacted: every sensitive output's value, every attribute path a resource instance lists in `sensitive_attributes`
(state format 4), and each instance's `private` blob (provider data, opaque and possibly secret). Kept: serial,
lineage, versions, addresses, types, providers, and the attributes that are not sensitive (ids, names), as HCP's
sanitized state keeps them. Pure: the runner calls it, the server checks what it was given with `is_sanitized`.
"""

from __future__ import annotations

import copy
from typing import Any

REDACTED = "(sensitive value)"
# how the agent's envelope (`runner/hyok_envelope.py`) begins: what the server checks a HYOK state blob is
ENVELOPE_MAGIC = b"TERRACE-HYOK-1\n"


def _redact_path(value: Any, path: list[Any]) -> Any:
    """`value` with the element at `path` (a state's `sensitive_attributes` entry) replaced by REDACTED."""
    if not path:
        return REDACTED
    step, rest = path[0], path[1:]
    key: Any = step.get("value") if isinstance(step, dict) else step
    if isinstance(value, dict) and isinstance(key, str) and key in value:
        value[key] = _redact_path(value[key], rest)
    elif isinstance(value, list) and isinstance(key, int) and 0 <= key < len(value):
        value[key] = _redact_path(value[key], rest)
    elif isinstance(value, list) and key is None:  # a set element: no index, every element is redacted
        for index, element in enumerate(value):
            value[index] = _redact_path(element, rest)
    return value


def _paths(entry: Any) -> list[Any]:
    """One `sensitive_attributes` entry as a list of steps: terraform < 1.10 writes a list of
    `{"type": "get_attr"|"index", "value": ...}`; terraform >= 1.10 writes `{"type": "...", "value": ...}` lists too,
    or a bare list of names."""
    return entry if isinstance(entry, list) else []


def sanitize(state: dict[str, Any]) -> dict[str, Any]:
    """A copy of a parsed state with its sensitive values redacted."""
    clean = copy.deepcopy(state)
    for output in (clean.get("outputs") or {}).values():
        if isinstance(output, dict) and output.get("sensitive"):
            output["value"] = REDACTED
    for resource in clean.get("resources") or []:
        if not isinstance(resource, dict):
            continue
        for instance in resource.get("instances") or []:
            if not isinstance(instance, dict):
                continue
            instance.pop("private", None)
            attributes = instance.get("attributes")
            for entry in instance.get("sensitive_attributes") or []:
                if isinstance(attributes, dict):
                    _redact_path(attributes, _paths(entry))
    return clean


def is_sanitized(state: dict[str, Any]) -> bool:
    """True when no sensitive output carries a value and no instance carries a private blob: what the server
    accepts as a sanitized state (it cannot check attribute paths it is not told of, so the agent's own
    `sanitize` is what redacts those)."""
    for output in (state.get("outputs") or {}).values():
        if isinstance(output, dict) and output.get("sensitive") and output.get("value") != REDACTED:
            return False
    for resource in state.get("resources") or []:
        for instance in (resource.get("instances") or []) if isinstance(resource, dict) else []:
            if isinstance(instance, dict) and instance.get("private"):
                return False
    return True


PLAN_CHANGE_KEYS = ("actions", "importing", "replace_paths", "action_reason")
PLAN_RESOURCE_KEYS = ("address", "module_address", "mode", "type", "name", "index", "provider_name", "action_reason")


def sanitize_plan(plan: dict[str, Any]) -> dict[str, Any]:
    """What the server keeps of a HYOK workspace's JSON plan: what changes and how, never a value (the values of a
    plan, sensitive or not, are the customer's to decrypt: they travel only in the encrypted saved plan)."""
    changes = []
    for change in plan.get("resource_changes") or []:
        if not isinstance(change, dict):
            continue
        kept = {k: change[k] for k in PLAN_RESOURCE_KEYS if k in change}
        found = change.get("change")
        inner: dict[str, Any] = found if isinstance(found, dict) else {}
        kept["change"] = {k: inner[k] for k in PLAN_CHANGE_KEYS if k in inner}
        changes.append(kept)
    outputs = {
        name: {"actions": (change.get("actions") if isinstance(change, dict) else None) or []}
        for name, change in (plan.get("output_changes") or {}).items()
    }
    top = ("format_version", "terraform_version", "errored", "applyable", "complete")
    kept_plan: dict[str, Any] = {k: plan[k] for k in top if k in plan}
    return {**kept_plan, "resource_changes": changes, "output_changes": outputs, "hyok_sanitized": True}
