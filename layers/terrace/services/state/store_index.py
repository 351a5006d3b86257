"""Storage of what the state area derives from state versions (part of `store.py`'s `StateStore`, as `.index`).

Outputs: one item per output (`wos-…`, sort key `wos`), listed per version through gsi1 `<sv-id>#outputs` by
name; a value past `MAX_INLINE_OUTPUT_BYTES` lives in the blob store (`state/<ws>/<sv>/outputs/<wos>.json`).
Resources: one item per instance of the workspace's current state, pk `<ws-id>#resources`, sk address, and
gsi1 `org#<org>#resources` (`<ws-id>#<address>`) for the organization-wide search. Each item carries the state
version it was indexed from (`indexed_from`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from terrace.adapters.blobs import BlobStore
from terrace.adapters.table import Table
from terrace.domain import clock
from terrace.domain.errors import NotFound
from terrace.domain.ids import looks_like, new_id
from terrace.domain.state import OutputValue, ResourceInstance
from terrace.domain.state_index import IndexedResource, StoredOutput
from terrace.domain.workspace import Workspace

MAX_INLINE_OUTPUT_BYTES = 300 * 1024  # larger values go to the blob store (DynamoDB items stop at 400 KB)
OUTPUT_SORT_KEY = "wos"


def outputs_of(sv_id: str) -> str:
    return f"{sv_id}#outputs"


def resources_of(workspace_id: str) -> str:
    return f"{workspace_id}#resources"


def resources_in(organization: str) -> str:
    return f"org#{organization}#resources"


def _resource(item: dict[str, Any]) -> IndexedResource:
    return IndexedResource(
        workspace_id=item["workspace_id"],
        workspace_name=item.get("workspace_name", ""),
        address=item["sk"],
        name=item["name"],
        type=item["type"],
        module=item["module"],
        provider=item["provider"],
        name_index=item.get("name_index"),
        ids=tuple(item.get("ids", [])),
        created_at=item["created_at"],
        updated_at=item["updated_at"],
        modified_by=item["modified_by"],
        indexed_from=item["indexed_from"],
    )


class StateIndexStore:
    def __init__(self, table: Table, blobs: BlobStore) -> None:
        self._table, self._blobs = table, blobs

    # outputs -------------------------------------------------------------------------------------
    def put_outputs(self, sv_id: str, ws: Workspace, outputs: Iterable[OutputValue]) -> tuple[str, ...]:
        """Record the outputs of version `sv_id` of `ws`; their ids. A failed write removes the value blobs it
        had put."""
        items: list[dict[str, Any]] = []
        ids: list[str] = []
        for out in outputs:
            wos_id = new_id("wos")
            ids.append(wos_id)
            item: dict[str, Any] = {
                "pk": wos_id,
                "sk": OUTPUT_SORT_KEY,
                "id": wos_id,
                "state_version_id": sv_id,
                "workspace_id": ws.id,
                "organization": ws.organization,
                "name": out.name,
                "sensitive": out.sensitive,
                "type": out.type,
                "detailed_type": json.dumps(out.detailed_type),
                "gsi1pk": outputs_of(sv_id),
                "gsi1sk": out.name,
            }
            value = json.dumps(out.value)
            if len(value) > MAX_INLINE_OUTPUT_BYTES:
                key = f"state/{ws.id}/{sv_id}/outputs/{wos_id}.json"
                self._blobs.put(key, value.encode(), "application/json")
                item["value_blob"] = key
            else:
                item["value_json"] = value
            items.append(item)
        try:
            self._table.batch_put(items)
        except Exception:
            for item in items:
                if "value_blob" in item:
                    self._blobs.delete(item["value_blob"])
            raise
        return tuple(ids)

    def _output(self, item: dict[str, Any]) -> StoredOutput:
        raw = self._blobs.get(item["value_blob"]).decode() if "value_blob" in item else item.get("value_json", "null")
        return StoredOutput(
            id=item["id"],
            state_version_id=item["state_version_id"],
            workspace_id=item["workspace_id"],
            organization=item["organization"],
            name=item["name"],
            sensitive=bool(item["sensitive"]),
            type=item["type"],
            detailed_type=json.loads(item["detailed_type"]),
            value=json.loads(raw),
        )

    def outputs(self, sv_id: str) -> list[StoredOutput]:
        """A version's outputs, by name."""
        return [self._output(item) for item in self._table.query(outputs_of(sv_id), index="gsi1")]

    def output(self, wos_id: str) -> StoredOutput:
        item = self._table.get(wos_id, OUTPUT_SORT_KEY) if looks_like(wos_id, "wos") else None
        if item is None:
            raise NotFound(f"state version output {wos_id} not found")
        return self._output(item)

    def delete_outputs(self, sv_id: str) -> None:
        items = self._table.query(outputs_of(sv_id), index="gsi1")
        for item in items:
            if "value_blob" in item:
                self._blobs.delete(item["value_blob"])
        self._table.batch_delete([(item["pk"], item["sk"]) for item in items])

    def delete_output_ids(self, output_ids: Sequence[str]) -> None:
        """Outputs by id (those a write put but could not record on its version)."""
        self._table.batch_delete([(wos_id, OUTPUT_SORT_KEY) for wos_id in output_ids])

    # resources -----------------------------------------------------------------------------------
    def replace_resources(self, ws: Workspace, sv_id: str, instances: tuple[ResourceInstance, ...]) -> None:
        """Make the workspace's index hold `instances`, tagged as indexed from `sv_id`: an instance keeps its
        created time, and its updated time and modifying version while its digest is unchanged."""
        existing = {item["sk"]: item for item in self._table.query(resources_of(ws.id))}
        now = clock.now_iso()
        puts: list[dict[str, Any]] = []
        for inst in instances:
            old = existing.pop(inst.address, None)
            changed = old is None or old.get("digest") != inst.digest
            puts.append(
                {
                    "pk": resources_of(ws.id),
                    "sk": inst.address,
                    "workspace_id": ws.id,
                    "workspace_name": ws.name,
                    "name": inst.name,
                    "type": inst.type,
                    "mode": inst.mode,
                    "module": inst.module,
                    "provider": inst.provider,
                    "name_index": inst.name_index,
                    "ids": list(inst.ids),
                    "digest": inst.digest,
                    "created_at": old["created_at"] if old else now,
                    "updated_at": now if changed or not old else old["updated_at"],
                    "modified_by": sv_id if changed or not old else old["modified_by"],
                    "indexed_from": sv_id,
                    "gsi1pk": resources_in(ws.organization),
                    "gsi1sk": f"{ws.id}#{inst.address}",
                }
            )
        # Plain batch writes, not transactions: readers only show items tagged with the current version.
        self._table.batch_put(puts)
        self._table.batch_delete([(item["pk"], item["sk"]) for item in existing.values()])

    def resources(self, workspace_id: str) -> list[IndexedResource]:
        """Every indexed instance of a workspace, whichever version it was indexed from, by address."""
        return [_resource(item) for item in self._table.query(resources_of(workspace_id))]

    def resources_in(self, organization: str) -> list[IndexedResource]:
        """Every indexed instance of an organization's workspaces (the organization's key)."""
        return [_resource(item) for item in self._table.query(resources_in(organization), index="gsi1")]

    def delete_resources(self, workspace_id: str) -> None:
        items = self._table.query(resources_of(workspace_id))
        self._table.batch_delete([(item["pk"], item["sk"]) for item in items])
