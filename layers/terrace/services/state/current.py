"""A workspace's current state version: the pointer fields every write changes in one transaction with the
version it makes current, shared by the state writers (`uploads.py`, `writes.py`, `versions.py`; the
transaction's items are the store's, `store.py`)."""

from __future__ import annotations

import dataclasses

from terrace.domain import clock
from terrace.domain.state import ParsedState
from terrace.domain.state_versions import StateVersion
from terrace.domain.workspace import Workspace

PENDING_KEY = "pending_state_version_id"  # in Workspace.extra while a two-step upload is outstanding
# in Workspace.extra: the encrypted data key of a Hold Your Own Key workspace's current state (HCP's workspace
# relationship `hyok-data-key-for-encryption`)
HYOK_DATA_KEY = "hyok-data-key"
ATTEMPTS = 8


def with_current(ws: Workspace, sv: StateVersion, resource_count: int) -> Workspace:
    extra = {k: v for k, v in ws.extra.items() if k not in (PENDING_KEY, HYOK_DATA_KEY)}
    if sv.hyok_data_key_id:
        extra[HYOK_DATA_KEY] = sv.hyok_data_key_id
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
