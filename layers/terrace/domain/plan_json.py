"""Redaction of `terraform show -json` plans: sensitive values become null (json-output-redacted), and
the workspace's sensitive variables never appear (`hide_secrets`: the runner before it uploads the plan
JSON, the server again before it serves it)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from terrace.domain.masking import Masker, mask_strings


def mask(value: Any, sensitive: Any) -> Any:
    """Null out the parts of `value` that the parallel `sensitive` structure marks true."""
    if sensitive is True:
        return None
    if isinstance(value, dict) and isinstance(sensitive, dict):
        return {k: mask(v, sensitive.get(k, False)) for k, v in value.items()}
    if isinstance(value, list) and isinstance(sensitive, list):
        return [mask(v, sensitive[i] if i < len(sensitive) else False) for i, v in enumerate(value)]
    return value


def _redact_module(module: dict[str, Any]) -> None:
    for resource in module.get("resources", []):
        resource["values"] = mask(resource.get("values"), resource.get("sensitive_values", {}))
    for child in module.get("child_modules", []):
        _redact_module(child)


def _redact_values(values: dict[str, Any] | None) -> None:
    if not values:
        return
    for output in (values.get("outputs") or {}).values():
        if output.get("sensitive"):
            output["value"] = None
    if values.get("root_module"):
        _redact_module(values["root_module"])


def redact(plan: dict[str, Any]) -> dict[str, Any]:
    for change in [*(plan.get("resource_changes") or []), *(plan.get("resource_drift") or [])]:
        body = change.get("change", {})
        body["before"] = mask(body.get("before"), body.get("before_sensitive", False))
        body["after"] = mask(body.get("after"), body.get("after_sensitive", False))
    for body in (plan.get("output_changes") or {}).values():
        body["before"] = mask(body.get("before"), body.get("before_sensitive", False))
        body["after"] = mask(body.get("after"), body.get("after_sensitive", False))
    _redact_values(plan.get("planned_values"))
    _redact_values((plan.get("prior_state") or {}).get("values"))
    declared = ((plan.get("configuration") or {}).get("root_module") or {}).get("variables") or {}
    for name, variable in (plan.get("variables") or {}).items():
        if (declared.get(name) or {}).get("sensitive"):
            variable["value"] = None
    _redact_defaults((plan.get("configuration") or {}).get("root_module"))
    return plan


def _redact_defaults(module: Any) -> None:
    """A sensitive variable's default, in the configuration's every module."""
    if not isinstance(module, dict):
        return
    for variable in (module.get("variables") or {}).values():
        if isinstance(variable, dict) and variable.get("sensitive") and "default" in variable:
            variable["default"] = None
    for call in (module.get("module_calls") or {}).values():
        if isinstance(call, dict):
            _redact_defaults(call.get("module"))


def hide_secrets(plan: dict[str, Any], values: Iterable[str], terraform_keys: Iterable[str]) -> dict[str, Any]:
    """The plan with sensitive workspace variables nulled in its `variables` block (whatever the
    configuration declares) and every sensitive value masked wherever a string holds it."""
    keys = set(terraform_keys)
    for name, variable in (plan.get("variables") or {}).items():
        if name in keys and isinstance(variable, dict):
            variable["value"] = None
    masked: dict[str, Any] = mask_strings(plan, Masker(values))
    return masked


# What a plan does to each resource (the run page's summary) ------------------------------------
SYMBOLS = {"create": "+", "update": "~", "delete": "−", "replace": "−/+", "read": "<=", "no-op": ""}


def change_kind(actions: list[str]) -> str:
    """Terraform's `change.actions` list as one word: create, update, delete, replace, read or no-op."""
    if sorted(actions) == ["create", "delete"]:
        return "replace"
    return actions[0] if len(actions) == 1 and actions[0] in SYMBOLS else "no-op"


def resource_changes(plan: dict[str, Any]) -> list[tuple[str, str]]:
    """(kind, address) of every resource the plan changes, in the plan's order; no-ops are left out."""
    found = []
    for change in plan.get("resource_changes") or []:
        if not isinstance(change, dict):
            continue
        kind = change_kind(list((change.get("change") or {}).get("actions") or []))
        if kind != "no-op":
            found.append((kind, str(change.get("address", ""))))
    return found


def redacted_copy_key(json_key: str) -> str:
    """Where a large plan's json-output-redacted document is stored beside its JSON (`PlanService.record`)."""
    return json_key.removesuffix(".json") + ".redacted.json"


def stored_plan_keys(artifact_key: str | None, json_key: str | None) -> list[str]:
    """Every object a plan attempt may leave: its plan file, its JSON and the JSON's redacted copy."""
    return [k for k in (artifact_key, json_key, redacted_copy_key(json_key) if json_key else None) if k]
