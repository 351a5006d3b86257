"""SCIM 2.0 (RFC 7643/7644) without storage: the schemas, filters (`domain/scim_filter.py`), PATCH operations
(add, replace, remove, with or without a path, in the shapes Okta and Entra ID send: `"op": "Replace"`,
`"value": "False"`, `emails[type eq "work"].value`, `members[value eq "id"]`) and pagination. Resources are plain
dicts of their SCIM attributes."""

from __future__ import annotations

import copy
import re
from typing import Any

from terrace.domain import limits
from terrace.domain.errors import BadRequest, Invalid
from terrace.domain.scim_filter import InvalidFilter as InvalidFilter  # the filter's error, named with the others
from terrace.domain.scim_filter import attribute, matches
from terrace.domain.scim_filter import parse as parse_filter  # noqa: F401  (checked by the services)

USER = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP = "urn:ietf:params:scim:schemas:core:2.0:Group"
LIST = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
PATCH = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
ERROR = "urn:ietf:params:scim:api:messages:2.0:Error"
ENTERPRISE = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"
USER_ATTRIBUTES = ("userName", "externalId", "name", "displayName", "nickName", "title", "emails", "active", "locale")
GROUP_ATTRIBUTES = ("displayName", "externalId", "members")
RESOURCE_MAX_BYTES = 64 * 1024
COUNT_MAX = 100  # page size when asked for more (and the default)


class InvalidPath(BadRequest):
    title = "invalidPath"


class InvalidSyntax(BadRequest):
    title = "invalidSyntax"


class InvalidValue(Invalid):
    title = "invalidValue"


def page(items: list[Any], start_index: str | None, count: str | None) -> tuple[list[Any], int, int]:
    """RFC 7644 3.4.2.4: 1-based `startIndex` (below 1 is 1), `count` (negative is 0; at most COUNT_MAX)."""
    try:
        start = max(1, int(start_index or 1))
        size = min(COUNT_MAX, max(0, int(count))) if count not in (None, "") else COUNT_MAX
    except ValueError as exc:
        raise InvalidValue("startIndex and count must be integers") from exc
    return items[start - 1 : start - 1 + size], start, size


def list_response(resources: list[dict[str, Any]], total: int, start: int) -> dict[str, Any]:
    return {"schemas": [LIST], "totalResults": total, "startIndex": start, "itemsPerPage": len(resources),
            "Resources": resources}  # fmt: skip


def bounded(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise InvalidValue("the body must be a JSON object")
    limits.bounded_json(body, "body", RESOURCE_MAX_BYTES, pointer_base="")
    return body


def boolean(value: Any, name: str) -> bool:
    """Entra ID sends booleans as "True"/"False"."""
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if not isinstance(value, bool):
        raise InvalidValue(f"{name} must be a boolean")
    return value


def apply_patch(resource: dict[str, Any], body: Any) -> dict[str, Any]:
    """The resource after a PatchOp request's operations, in order (RFC 7644 3.5.2)."""
    body = bounded(body)
    operations = attribute(body, "Operations")
    if not isinstance(operations, list) or not operations:
        raise InvalidValue("Operations must be a non-empty list")
    patched = copy.deepcopy(resource)
    for operation in operations:
        if not isinstance(operation, dict):
            raise InvalidValue("each operation must be an object")
        op, path, value = (
            str(attribute(operation, "op") or "").lower(),
            attribute(operation, "path"),
            attribute(operation, "value"),
        )
        if op not in ("add", "replace", "remove"):
            raise InvalidValue(f"unknown PATCH op {op!r}")
        if path is None:
            if op == "remove" or not isinstance(value, dict):
                raise InvalidPath("an operation without a path must add or replace an object of attributes")
            for key, item in value.items():
                _apply(patched, op, key, item)
        elif not isinstance(path, str) or not path:
            raise InvalidPath("path must be a string")
        else:
            _apply(patched, op, path, value)
    return patched


def _apply(resource: dict[str, Any], op: str, path: str, value: Any) -> None:
    if path.lower().startswith("urn:"):
        schema, _, attr = path.rpartition(":")
        if schema.lower() == ENTERPRISE.lower():  # the enterprise extension is kept as sent
            extension = resource.setdefault(ENTERPRISE, {})
            _apply(extension, op, attr, value)
            return
        path = attr
    filtered = re.match(r"^(\w+)\[([^\]]*)\](?:\.(\w+))?\Z", path)
    if filtered:
        name, inner, sub = filtered[1], filtered[2], filtered[3]
        key = _key(resource, name)
        items = resource.get(key) or []
        if op == "remove" and not sub:
            resource[key] = [i for i in items if not (isinstance(i, dict) and matches(i, inner))]
            return
        targets = [i for i in items if isinstance(i, dict) and matches(i, inner)]
        if not targets:  # Entra's emails[type eq "work"].value on a user without one: add it
            eq = re.match(r'^\s*(\w+)\s+eq\s+"([^"]*)"\s*\Z', inner)
            if not eq or op == "remove":
                return
            targets = [{eq[1]: eq[2]}]
            resource[key] = [*items, *targets]
        for target in targets:
            if op == "remove":
                target.pop(_key(target, sub), None)
            elif sub:
                target[_key(target, sub)] = value
            elif isinstance(value, dict):
                target.update(value)
        return
    head, _, sub = path.partition(".")
    key = _key(resource, head)
    if sub:
        parent = resource.setdefault(key, {})
        if not isinstance(parent, dict):
            raise InvalidPath(f"{head} has no sub-attributes")
        _apply(parent, op, sub, value)
        return
    if op == "remove":
        if isinstance(value, list) and isinstance(resource.get(key), list):  # Okta's remove of some members
            gone = {v.get("value") for v in value if isinstance(v, dict)}
            resource[key] = [i for i in resource[key] if not (isinstance(i, dict) and i.get("value") in gone)]
        else:
            resource.pop(key, None)
    elif op == "add" and isinstance(value, list) and isinstance(resource.get(key), list):
        known = {i.get("value") for i in resource[key] if isinstance(i, dict)}
        resource[key] = [*resource[key], *(v for v in value if not (isinstance(v, dict) and v.get("value") in known))]
    elif isinstance(value, dict) and isinstance(resource.get(key), dict) and op == "add":
        resource[key].update(value)
    else:
        resource[key] = value


def _key(resource: dict[str, Any], name: str) -> str:
    """The resource's own spelling of an attribute name (names are case-insensitive)."""
    return next((k for k in resource if k.lower() == name.lower()), name)
