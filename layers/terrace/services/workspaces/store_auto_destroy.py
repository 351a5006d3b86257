"""Storage of the auto-destroy markers of ephemeral workspaces (`domain/auto_destroy.py`): one item per workspace
with a due time (`<ws>` / `autodestroy`), in the sparse index the sweep reads (`services/workflows/auto_destroy.py`):
gsi1 `autodestroy#due`, ordered by when the sweep must next look at it (`wake_key`).

The workspace item is the truth; a marker only says when to look. It is written after the workspace (a marker
lost to a crash in between is written again by the next change; one left over is dropped by the sweep, which
always re-reads the workspace)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from terrace.adapters.table import ConditionFailed, Table
from terrace.domain import auto_destroy as ad
from terrace.domain import clock
from terrace.domain.workspace import Workspace

DUE_INDEX = "autodestroy#due"  # gsi1pk of the markers
SORT_KEY = "autodestroy"


def marker_key(workspace_id: str) -> tuple[str, str]:
    return workspace_id, SORT_KEY


def wake_key(wake: float, workspace_id: str) -> str:
    return f"{clock.iso(datetime.fromtimestamp(max(wake, 0), UTC))}#{workspace_id}"


def marker_item(workspace_id: str, due_iso: str, reminded: tuple[int, ...], version: int) -> dict[str, Any]:
    pk, sk = marker_key(workspace_id)
    return {
        "pk": pk,
        "sk": sk,
        "workspace_id": workspace_id,
        "due": due_iso,
        "reminded": list(reminded),
        "version": version,
        "gsi1pk": DUE_INDEX,
        "gsi1sk": wake_key(ad.wake_at(due_iso, reminded), workspace_id),
    }


class AutoDestroyMarkers:
    def __init__(self, table: Table) -> None:
        self._table = table

    def sync(self, ws: Workspace) -> None:
        """Make the marker say what the workspace says: its due time, reminders from scratch; none without one."""
        current = self._table.get(*marker_key(ws.id))
        if ws.auto_destroy_at is None:
            if current is not None:
                self._table.delete(*marker_key(ws.id))
            return
        if current is not None and current.get("due") == ws.auto_destroy_at:
            return
        version = int(current["version"]) + 1 if current else 1
        self._table.put(marker_item(ws.id, ws.auto_destroy_at, (), version))

    def due(self, wake_before: str, limit: int = 100) -> list[dict[str, Any]]:
        """The markers ({workspace_id, due, reminded, version}) whose next look is at or before `wake_before`
        (ISO), earliest first: one query, which returns nothing while no workspace is ephemeral."""
        found = []
        for item in self._table.query(DUE_INDEX, index="gsi1", limit=limit):
            if str(item["gsi1sk"]).split("#", 1)[0] > wake_before:
                break
            found.append(item)
        return found

    def advance(self, marker: dict[str, Any], reminded: tuple[int, ...]) -> bool:
        """Record the reminders sent (False: another process changed the marker first)."""
        updated = marker_item(marker["workspace_id"], marker["due"], reminded, int(marker["version"]) + 1)
        try:
            self._table.put(updated, if_version=int(marker["version"]))
        except ConditionFailed:
            return False
        return True

    def drop(self, workspace_id: str) -> None:
        self._table.delete(*marker_key(workspace_id))
