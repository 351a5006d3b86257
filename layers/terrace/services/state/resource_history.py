"""A resource's history: the state versions of its workspace in which the resource instance at an address changed
(created, changed, removed), each with its attribute changes (`domain/state_diff.py`), newest first.

Each version is compared with the one before it, so a page reads its versions' states plus one: a page covers at
most `PAGE` versions, however few of them changed the resource, and names where the next (older) page starts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from terrace.domain import limits
from terrace.domain.errors import Conflict, Invalid, NotFound
from terrace.domain.principal import Principal
from terrace.domain.state_diff import ResourceDiff, resource_change
from terrace.domain.state_versions import FINALIZED, StateVersion
from terrace.domain.workspace import Workspace
from terrace.services.state.versions import StateVersionService
from terrace.services.workspaces.workspaces import WorkspaceService

PAGE = 20  # state versions compared per page


@dataclass(frozen=True)
class HistoryEntry:
    version: StateVersion  # the version in which the resource changed
    previous: StateVersion | None  # the one it is compared with (None: the workspace's first)
    kind: str  # added | changed | removed
    diff: ResourceDiff


@dataclass(frozen=True)
class HistoryPage:
    workspace: Workspace
    address: str
    entries: list[HistoryEntry]
    first: StateVersion | None  # the newest and oldest versions this page compared
    last: StateVersion | None
    older: str | None  # the id of the version the next (older) page starts at; None: this page reached the first
    total: int  # the workspace's finalized versions
    unreadable: int = 0  # versions whose state is gone (deleted backing data): not compared


class ResourceHistory:
    def __init__(self, workspaces: WorkspaceService, versions: StateVersionService) -> None:
        self._workspaces, self._versions = workspaces, versions

    def page(
        self, principal: Principal, organization: str, name: str, address: str, start: str | None = None
    ) -> HistoryPage:
        """The changes of `address` in workspace `organization`/`name` (READ_STATE), from version `start` (else
        the current one) to at most `PAGE` versions back."""
        address = address.strip()
        if not address or len(address.encode()) > limits.STATE_ADDRESS_MAX_BYTES:
            raise Invalid("address must be a resource address", pointer="/address")
        ws = self._workspaces.get_by_name(principal, organization, name)
        versions = [sv for sv in self._versions.list_for(principal, ws) if sv.status == FINALIZED]  # newest first
        index = 0
        if start:
            ids = [sv.id for sv in versions]
            if start not in ids:
                raise NotFound(f"state version {start} not found")
            index = ids.index(start)
        window = versions[index : index + PAGE + 1]  # the page's versions and the one before its oldest
        states = [self._state(sv) for sv in window]
        entries: list[HistoryEntry] = []
        for i, sv in enumerate(window[:PAGE]):
            before_sv = window[i + 1] if i + 1 < len(window) else None
            after, before = states[i], states[i + 1] if before_sv is not None else None
            if after is None or (before_sv is not None and before is None):
                continue
            change = resource_change(before, after, address)
            if change is not None:
                entries.append(HistoryEntry(sv, before_sv, change[0], change[1]))
        compared = window[:PAGE]
        return HistoryPage(
            ws,
            address,
            entries,
            compared[0] if compared else None,
            compared[-1] if compared else None,
            window[PAGE].id if len(window) > PAGE else None,
            len(versions),
            sum(1 for state in states if state is None),
        )

    def _state(self, sv: StateVersion) -> dict[str, Any] | None:
        try:
            return self._versions.parsed(sv)
        except (NotFound, Conflict):  # its data was deleted, or its object is not what was recorded
            return None
