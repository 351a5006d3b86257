"""Tags of an organization's workspaces, and a workspace's tag bindings."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from terrace.domain.errors import Invalid
from terrace.domain.workspace import NAME_RE, Workspace

TAG_KEY_MAX, TAG_VALUE_MAX = 128, 256
BINDINGS_MAX = 10  # HCP's: key-value tags per workspace or project
RESERVED_KEY_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,127}\Z")  # a reserved key: no spaces, no `!`


@dataclass(frozen=True)
class Tag:
    id: str
    name: str
    organization: str  # the organization's current name
    created_at: str
    instance_count: int = 0


@dataclass(frozen=True)
class TagRef:
    """A tag as a request names it: by id, by name, or both."""

    id: str | None = None
    name: str | None = None


def model_name(key: str) -> bool:
    return bool(NAME_RE.match(key.replace(":", "-")))


def all_bindings(ws: Workspace) -> list[tuple[str, str]]:
    keys = {key for key, _ in ws.tag_bindings}
    return [*ws.tag_bindings, *sorted((name, "") for name in ws.tag_names if name not in keys)]


@dataclass(frozen=True)
class ReservedTagKey:
    """A tag key the organization reserves (`reserved-tag-keys`); with `disable_overrides`, a workspace cannot
    bind the key to another value than the one its project binds it to."""

    id: str
    organization: str  # the organization's key
    key: str
    disable_overrides: bool
    created_at: str
    updated_at: str
    version: int = 1


def check_reserved_key(value: Any, pointer: str = "/data/attributes/key") -> str:
    if not isinstance(value, str) or not RESERVED_KEY_RE.match(value):
        raise Invalid("Key is invalid", pointer=pointer)
    return value


def tag_bindings(items: Any, pointer: str = "/data/relationships/tag-bindings") -> tuple[tuple[str, str], ...]:
    """Key-value tags from `[{key, value}]` (or `{type: tag-bindings, attributes: {key, value}}`) in the order given
    (HCP answers them so); a key given twice keeps its last value."""
    if not isinstance(items, list):
        raise Invalid("tag-bindings must be a list of {key, value}", pointer=pointer)
    found: dict[str, str] = {}
    for entry in items:
        attrs = entry.get("attributes", entry) if isinstance(entry, dict) else None
        key, value = (attrs.get("key"), attrs.get("value", "")) if isinstance(attrs, dict) else (None, None)
        if not isinstance(key, str) or not 0 < len(key) <= TAG_KEY_MAX or "\0" in key:
            raise Invalid(f"each tag binding needs a key of 1..{TAG_KEY_MAX} characters", pointer=pointer)
        if value is None:
            value = ""
        if not isinstance(value, str) or len(value) > TAG_VALUE_MAX or "\0" in value:
            raise Invalid(f"a tag binding's value is a string of at most {TAG_VALUE_MAX} characters", pointer=pointer)
        found[key] = value
    return tuple(found.items())


def effective_bindings(inherited: tuple[tuple[str, str], ...], own: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """A workspace's bindings over its project's: its own value of a key wins."""
    merged = {**dict(inherited), **dict(own)}
    return list(merged.items())


def bound_all(ws: Workspace, inherited: tuple[tuple[str, str], ...], wanted: list[tuple[str, str | None]]) -> bool:
    """Whether `ws` carries every wanted (key, value) binding, its project's included (value None: any value; a
    plain tag is a key without value)."""
    effective = effective_bindings(inherited, all_bindings(ws))
    return all(
        any(k in (key, key.lower() if not v else key) and (value is None or v == value) for k, v in effective)
        for key, value in wanted
    )


def tagged(
    ws: Workspace,
    inherited: tuple[tuple[str, str], ...],
    tags: list[str],
    exclude_tags: list[str],
    bindings: list[tuple[str, str | None]],
) -> bool:
    """Whether `ws` matches a workspace search: `tags` all of them, `exclude_tags` none of them, `bindings` every
    (key, value) tag binding (value None: any value); what it inherits from its project counts as its own."""
    keys = _tag_keys(ws, inherited)
    wanted, unwanted = {t.lower() for t in tags}, {t.lower() for t in exclude_tags}
    return wanted <= keys and not unwanted & keys and bound_all(ws, inherited, bindings)


def _tag_keys(ws: Workspace, inherited: tuple[tuple[str, str], ...]) -> set[str]:
    """What `search[tags]` matches: plain tags and the keys of tag bindings, its project's too (TFC treats both as
    tags; terraform >= 1.10 sends a `cloud` block's keys as `search[tags]` beside `filter[tagged]`)."""
    return {*ws.tag_names, *(key.lower() for key, _ in (*ws.tag_bindings, *inherited))}


def check_count(bindings: tuple[tuple[str, str], ...], pointer: str = "/data/relationships/tag-bindings") -> None:
    if len(bindings) > BINDINGS_MAX:
        raise Invalid(f"cannot exceed {BINDINGS_MAX} bindings per resource", pointer=pointer)
