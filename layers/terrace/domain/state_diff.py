"""The difference between two Terraform states: resources added, removed and changed, with attribute changes.

Pure functions over parsed state documents. Sensitive attributes (the instance's `sensitive_attributes`)
and sensitive outputs are compared but never shown: their values become `SENSITIVE`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

SENSITIVE = "(sensitive)"


@dataclass(frozen=True)
class AttributeChange:
    path: str
    before: str | None  # None: the attribute did not exist
    after: str | None


@dataclass(frozen=True)
class ResourceDiff:
    address: str
    changes: tuple[AttributeChange, ...] = ()


@dataclass(frozen=True)
class StateDiff:
    added: tuple[ResourceDiff, ...] = ()
    removed: tuple[ResourceDiff, ...] = ()
    changed: tuple[ResourceDiff, ...] = ()
    outputs: tuple[AttributeChange, ...] = field(default_factory=tuple)

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed or self.outputs)


def _address(res: dict[str, Any], key: Any) -> str:
    module = res.get("module")
    base = (f"{module}." if module else "") + ("data." if res.get("mode") == "data" else "")
    base += f"{res.get('type')}.{res.get('name')}"
    if key is None:
        return base
    return base + (f"[{key}]" if isinstance(key, int) else f"[{json.dumps(key)}]")


def _sensitive_roots(inst: dict[str, Any]) -> set[str]:
    roots = set()
    for path in inst.get("sensitive_attributes") or []:
        if isinstance(path, list) and path and isinstance(path[0], dict) and "value" in path[0]:
            roots.add(str(path[0]["value"]))
    return roots


def _flatten(value: Any, prefix: str, into: dict[str, str]) -> None:
    if isinstance(value, dict) and value:
        for key, inner in value.items():
            _flatten(inner, f"{prefix}.{key}" if prefix else str(key), into)
    elif isinstance(value, list) and value:
        for index, inner in enumerate(value):
            _flatten(inner, f"{prefix}[{index}]", into)
    else:
        into[prefix] = json.dumps(value)


def instances(doc: dict[str, Any], only: str | None = None) -> dict[str, dict[str, str]]:
    """address -> flattened attributes (path -> JSON value), sensitive ones masked; `only`: that address alone."""
    found: dict[str, dict[str, str]] = {}
    for res in doc.get("resources") or []:
        if not isinstance(res, dict):
            continue
        for inst in res.get("instances") or []:
            if not isinstance(inst, dict) or (only is not None and _address(res, inst.get("index_key")) != only):
                continue
            flat: dict[str, str] = {}
            sensitive = _sensitive_roots(inst)
            for key, value in (inst.get("attributes") or {}).items():
                if key in sensitive:
                    flat[key] = SENSITIVE + json.dumps(value)  # compared, then masked in `_changes`
                else:
                    _flatten(value, key, flat)
            found[_address(res, inst.get("index_key"))] = flat
    return found


def _shown(value: str | None) -> str | None:
    return SENSITIVE if value is not None and value.startswith(SENSITIVE) else value


def _changes(before: dict[str, str], after: dict[str, str]) -> tuple[AttributeChange, ...]:
    paths = sorted(set(before) | set(after))
    return tuple(
        AttributeChange(p, _shown(before.get(p)), _shown(after.get(p))) for p in paths if before.get(p) != after.get(p)
    )


def _outputs(doc: dict[str, Any]) -> dict[str, str]:
    found = {}
    for name, body in (doc.get("outputs") or {}).items():
        if isinstance(body, dict):
            value = json.dumps(body.get("value"))
            found[str(name)] = SENSITIVE + value if body.get("sensitive") else value
    return found


def diff(before: dict[str, Any], after: dict[str, Any]) -> StateDiff:
    """What changed from state `before` to state `after`."""
    old, new = instances(before), instances(after)
    empty: dict[str, str] = {}
    return StateDiff(
        added=tuple(ResourceDiff(a, _changes(empty, new[a])) for a in sorted(set(new) - set(old))),
        removed=tuple(ResourceDiff(a, _changes(old[a], empty)) for a in sorted(set(old) - set(new))),
        changed=tuple(
            ResourceDiff(a, _changes(old[a], new[a])) for a in sorted(set(old) & set(new)) if old[a] != new[a]
        ),
        outputs=_changes(_outputs(before), _outputs(after)),
    )


def resource_change(
    before: dict[str, Any] | None, after: dict[str, Any], address: str
) -> tuple[str, ResourceDiff] | None:
    """How the resource instance at `address` changed from state `before` (None: there was none before) to state
    `after`: ("added" | "removed" | "changed", its attribute changes), or None when it did not."""
    old = instances(before, address).get(address) if before is not None else None
    new = instances(after, address).get(address)
    if old == new:
        return None
    if old is None:
        return "added", ResourceDiff(address, _changes({}, new or {}))
    if new is None:
        return "removed", ResourceDiff(address, _changes(old, {}))
    return "changed", ResourceDiff(address, _changes(old, new))
