"""Run attributes as clients send them (`POST /runs`): checked and bounded before anything is written."""

from __future__ import annotations

from typing import Any

from terrace.domain import limits
from terrace.domain.errors import Invalid


def boolean(attrs: dict[str, Any], key: str, default: bool) -> bool:
    value = attrs.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise Invalid(f"{key} must be true or false", pointer=f"/data/attributes/{key}")
    return value


def addresses(attrs: dict[str, Any], key: str) -> list[str]:
    value = attrs.get(key) or []
    if (
        not isinstance(value, list)
        or len(value) > limits.RUN_ADDRS_MAX
        or not all(isinstance(a, str) and a.strip() and len(a) <= limits.RUN_ADDR_MAX for a in value)
    ):
        raise Invalid(
            f"{key} must be a list of at most {limits.RUN_ADDRS_MAX} addresses "
            f"of at most {limits.RUN_ADDR_MAX} characters",
            pointer=f"/data/attributes/{key}",
        )
    return list(limits.bounded_json(value, key, limits.RUN_LIST_MAX_BYTES))


def variables(attrs: dict[str, Any]) -> list[dict[str, str]]:
    value = attrs.get("variables") or []
    if not isinstance(value, list) or len(value) > limits.RUN_VARIABLES_MAX:
        raise Invalid(
            f"variables must be a list of at most {limits.RUN_VARIABLES_MAX} {{key, value}}",
            pointer="/data/attributes/variables",
        )
    found = []
    for entry in value:
        if (
            not isinstance(entry, dict)
            or not isinstance(entry.get("key"), str)
            or not isinstance(entry.get("value"), str)
        ):
            raise Invalid(
                "each variable needs a string key and an HCL string value", pointer="/data/attributes/variables"
            )
        limits.text(entry["key"], "variables", limits.RUN_VARIABLE_KEY_MAX)
        if len(entry["value"].encode("utf-8", "surrogatepass")) > limits.RUN_VARIABLE_VALUE_MAX:
            raise Invalid(
                f"a run variable's value is longer than {limits.RUN_VARIABLE_VALUE_MAX} bytes",
                pointer="/data/attributes/variables",
            )
        found.append({"key": entry["key"], "value": entry["value"]})
    return list(limits.bounded_json(found, "variables", limits.RUN_LIST_MAX_BYTES))
