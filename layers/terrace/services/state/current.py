"""A workspace's current state version: the pointer fields every write changes in one transaction with the
version it makes current, and the reads and transaction items the state writers share (`uploads.py`,
`versions.py`)."""

from __future__ import annotations

import dataclasses

from terrace.adapters.table import Put, Table, WriteOp
from terrace.domain import clock, state_versions
from terrace.domain.errors import NotFound
from terrace.domain.ids import looks_like
from terrace.domain.state import ParsedState
from terrace.domain.state_versions import DISCARDED, PENDING, StateVersion
from terrace.domain.workspace import Workspace

PENDING_KEY = "pending_state_version_id"  # in Workspace.extra while a two-step upload is outstanding
ATTEMPTS = 8


def with_current(ws: Workspace, sv: StateVersion, resource_count: int) -> Workspace:
    extra = {k: v for k, v in ws.extra.items() if k != PENDING_KEY}
    return dataclasses.replace(
        ws,
        current_state_version_id=sv.id,
        state_serial=sv.serial,
        state_lineage=sv.lineage or None,  # unknown until the events worker parses an undeclared one
        state_md5=sv.md5,
        resource_count=resource_count,
        extra=extra,
        version=ws.version + 1,
        updated_at=clock.now_iso(),
    )


def managed_count(parsed: ParsedState) -> int:
    return sum(1 for r in parsed.resources if r.mode == "managed")


def find_version(table: Table, sv_id: str) -> StateVersion:
    item = table.get(sv_id, "sv") if looks_like(sv_id, "sv") else None
    if item is None:
        raise NotFound(f"state version {sv_id} not found")
    return state_versions.sv_from_item(item)


def discard_pending_ops(table: Table, ws: Workspace) -> list[WriteOp]:
    """Transaction items that discard the workspace's outstanding pending version (a newer write supersedes it)."""
    pending_id = ws.extra.get(PENDING_KEY)
    item = table.get(pending_id, "sv") if pending_id else None
    if item is None or item["status"] != PENDING:
        return []
    old = state_versions.sv_from_item(item)
    gone = dataclasses.replace(
        old, status=DISCARDED, error="superseded by a newer state version", version=old.version + 1
    )
    return [Put(state_versions.sv_to_item(gone), if_version=old.version)]
