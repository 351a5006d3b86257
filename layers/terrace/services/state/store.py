"""Storage of the state area: state versions (`sv-…`, sort key `sv`, listed per workspace through gsi1
`<ws>#state-versions` by creation time), and through `index` (`store_index.py`) their outputs and the resource
index. The only module of `services/state/` (with `store_index.py`) that knows the table.

Writes of a state version join the workspace's write in one transaction: the services compose it from
`save_op`/`discard_pending_ops` and the workspace's own op, and commit it with `transact`; a lost condition
raises the table's `ConditionFailed`, which `services/optimistic.py` retries. `delete_all_of` removes what a
workspace holds here (its versions and their blobs, outputs and resource index)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from terrace.adapters.blobs import BlobStore
from terrace.adapters.table import ConditionFailed, Put, Table, WriteOp
from terrace.domain.errors import NotFound
from terrace.domain.ids import looks_like
from terrace.domain.state_versions import DISCARDED, PENDING, StateVersion
from terrace.services.state.store_index import StateIndexStore

SORT_KEY = "sv"


def versions_of(workspace_id: str) -> str:
    """The gsi1 partition listing a workspace's state versions (`gsi1sk`: `<created_at>#<sv id>`)."""
    return f"{workspace_id}#state-versions"


def to_item(sv: StateVersion) -> dict[str, Any]:
    item = {k: v for k, v in sv.__dict__.items() if v is not None}
    item["output_ids"] = list(sv.output_ids)
    item.update(pk=sv.id, sk=SORT_KEY, gsi1pk=versions_of(sv.workspace_id), gsi1sk=f"{sv.created_at}#{sv.id}")
    return item


def from_item(item: dict[str, Any]) -> StateVersion:
    names = StateVersion.__dataclass_fields__.keys()
    values = {k: v for k, v in item.items() if k in names}
    values["output_ids"] = tuple(item.get("output_ids", []))
    return StateVersion(**values)


class StateStore:
    def __init__(self, table: Table, blobs: BlobStore) -> None:
        self._table, self._blobs = table, blobs
        self.index = StateIndexStore(table, blobs)

    # reads ---------------------------------------------------------------------------------------
    def find(self, sv_id: str) -> StateVersion | None:
        item = self._table.get(sv_id, SORT_KEY) if looks_like(sv_id, "sv") else None
        return from_item(item) if item else None

    def load(self, sv_id: str) -> StateVersion:
        found = self.find(sv_id)
        if found is None:
            raise NotFound(f"state version {sv_id} not found")
        return found

    def recorded(self, sv_id: str) -> bool:
        """Whether a version was recorded (a write whose answer was lost may have committed)."""
        return self._table.get(sv_id, SORT_KEY) is not None

    def list_for_workspace(self, workspace_id: str, *, newest_first: bool = False) -> list[StateVersion]:
        items = self._table.query(versions_of(workspace_id), index="gsi1", reverse=newest_first)
        return [from_item(item) for item in items]

    # writes --------------------------------------------------------------------------------------
    @staticmethod
    def save_op(sv: StateVersion, expected_version: int | None = None) -> WriteOp:
        """The transaction item writing `sv`: a new version (absent) or one unchanged since `expected_version`."""
        if expected_version is None:
            return Put(to_item(sv), if_absent=True)
        return Put(to_item(sv), if_version=expected_version)

    def discard_pending_ops(self, pending_id: str | None) -> list[WriteOp]:
        """Transaction items that discard the workspace's outstanding pending version `pending_id` (a newer write
        supersedes it); none when it is not pending any more."""
        item = self._table.get(pending_id, SORT_KEY) if pending_id else None
        if item is None or item["status"] != PENDING:
            return []
        old = from_item(item)
        gone = dataclasses.replace(
            old, status=DISCARDED, error="superseded by a newer state version", version=old.version + 1
        )
        return [self.save_op(gone, old.version)]

    def transact(self, ops: Sequence[WriteOp]) -> None:
        """One transaction of this area's items and the workspace's (raises ConditionFailed when one lost)."""
        self._table.transact(ops)

    def save(self, sv: StateVersion, expected_version: int) -> None:
        """Replace `sv` if unchanged since `expected_version` (else ConditionFailed, for an optimistic loop)."""
        self._table.put(to_item(sv), if_version=expected_version)

    def save_if_unchanged(self, sv: StateVersion, expected_version: int) -> bool:
        """Replace `sv` if unchanged since `expected_version`; False when it changed meanwhile."""
        try:
            self.save(sv, expected_version)
        except ConditionFailed:
            return False
        return True

    # deleting ------------------------------------------------------------------------------------
    def delete_all_of(self, *, workspace: str) -> None:
        """Every state version of a workspace, with its state and JSON state blobs and outputs, then the
        workspace's resource index (after the workspace's deletion, or the http backend's DELETE)."""
        for sv in self.list_for_workspace(workspace):
            self.index.delete_outputs(sv.id)
            self._blobs.delete(sv.blob_key)
            self._blobs.delete(sv.json_blob_key)
            if sv.hyok_data_key_id:
                self._blobs.delete(sv.sanitized_blob_key)
            self._table.delete(sv.id, SORT_KEY)
        self.index.delete_resources(workspace)
