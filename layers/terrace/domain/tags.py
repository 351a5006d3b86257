"""Tags of an organization's workspaces, and a workspace's tag bindings."""

from __future__ import annotations

from dataclasses import dataclass

from terrace.domain.workspace import NAME_RE, Workspace


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
    return sorted([*ws.tag_bindings, *((name, "") for name in ws.tag_names if name not in keys)])
