"""The port through which a workspace's `vcs-repo` is connected: the VCS area (`services/vcs/connections.py`) fills
it, registering the repository's webhook before the workspace is written; without it `vcs-repo` is ignored."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from terrace.domain.principal import Principal
from terrace.domain.workspace import Workspace


class RepositoryLink(Protocol):
    def connect(self, principal: Principal, ws: Workspace, raw: Any) -> dict[str, Any] | None:
        """What `ws` shows as `vcs-repo` once `raw` (the client's `vcs-repo`, or null) applies."""
        ...

    def disconnect(self, ws: Workspace) -> None: ...


class OwnerLink(Protocol):
    """The same link for another owner of a repository (a policy set), by its id."""

    def connect_owner(
        self, principal: Principal, organization: str, owner_id: str, raw: Any, current: dict[str, Any] | None
    ) -> dict[str, Any] | None:
        """What the owner shows as `vcs-repo` once `raw` applies (the webhook registered or deleted)."""
        ...

    def release(self, owner_id: str) -> None: ...

    def announce(self, owner_id: str) -> None:
        """The owner was written with a new connection: its first version is made from the tracked branch."""
        ...


@dataclass(frozen=True)
class LinkedRepository:
    """A `vcs-repo` the link accepted: `apply_attributes` stores `shown` (None: no repository)."""

    shown: dict[str, Any] | None


def linked(link: RepositoryLink | None, principal: Principal, ws: Workspace, attrs: dict[str, Any]) -> dict[str, Any]:
    """`attrs` with its `vcs-repo` connected (the forge called), or as it was when it has none or no link is wired."""
    if link is None or "vcs-repo" not in attrs:
        return attrs
    return {**attrs, "vcs-repo": LinkedRepository(link.connect(principal, ws, attrs["vcs-repo"]))}
