"""A registry module's no-code designation (HCP Terraform's `no-code-modules`): whether the module may provision
workspaces without code, the version it is pinned to (empty: the newest) and, per variable, the values one may
choose from (`variable-options`). A module has at most one; go-tfe's `registry-module` attribute `no-code` is
whether it has an enabled one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from terrace.domain import limits
from terrace.domain.errors import Invalid

VARIABLE_OPTIONS_MAX = 100  # variables with options, per no-code module
OPTIONS_MAX = 100  # values one may choose from, per variable
VARIABLE_TYPES = ("string", "number", "bool", "list", "map", "object", "set", "tuple", "any")


@dataclass(frozen=True)
class VariableOption:
    id: str
    variable_name: str
    variable_type: str
    options: tuple[str, ...]


@dataclass(frozen=True)
class NoCodeModule:
    id: str
    module_id: str
    organization: str  # the storage key of the organization
    enabled: bool
    version_pin: str  # "" pins nothing: the module's newest version
    variable_options: tuple[VariableOption, ...]
    created_at: str
    updated_at: str


def check_enabled(value: Any, default: bool) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        raise Invalid("enabled must be true or false", pointer="/data/attributes/enabled")
    return value


def check_variable_options(raw: Any) -> list[dict[str, Any]]:
    """The `variable-options` of a request (each `variable-name`, `variable-type`, `options`), as stored (without
    ids); a variable named twice is refused."""
    pointer = "/data/relationships/variable-options"
    if not isinstance(raw, list):
        raise Invalid("variable-options must be a list", pointer=pointer)
    if len(raw) > VARIABLE_OPTIONS_MAX:
        raise Invalid(f"a no-code module has at most {VARIABLE_OPTIONS_MAX} variable options", pointer=pointer)
    found: list[dict[str, Any]] = []
    for entry in raw:
        name = entry.get("variable-name") if isinstance(entry, dict) else None
        kind = entry.get("variable-type") if isinstance(entry, dict) else None
        options = entry.get("options") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name or len(name) > limits.RUN_VARIABLE_KEY_MAX:
            raise Invalid("each variable option needs a variable-name", pointer=pointer)
        if kind not in VARIABLE_TYPES:
            raise Invalid(f"variable-type must be one of {', '.join(VARIABLE_TYPES)}", pointer=pointer)
        if not isinstance(options, list) or len(options) > OPTIONS_MAX or not all(isinstance(o, str) for o in options):
            raise Invalid(f"options must be a list of at most {OPTIONS_MAX} strings", pointer=pointer)
        if any(len(o) > limits.RUN_VARIABLE_VALUE_MAX for o in options):
            raise Invalid(f"an option is at most {limits.RUN_VARIABLE_VALUE_MAX} characters", pointer=pointer)
        if any(f["variable_name"] == name for f in found):
            raise Invalid(f"variable {name} has options twice", pointer=pointer)
        found.append({"variable_name": name, "variable_type": kind, "options": list(options)})
    return found
