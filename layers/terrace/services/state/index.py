"""What Terrace derives from state versions: per-version outputs and the resource index of current states.

Outputs: one item per output (`wos-…`), listed per version through gsi1 `<sv-id>#outputs`.
Resources: one item per instance of the workspace's current state, pk `<ws-id>#resources`, sk address,
and gsi1 `org#<org>#resources` for the organization-wide search. Each item carries the state version it
was indexed from; readers only show items of the workspace's current version, so a half-replaced index
is never mixed into answers.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
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


class StateIndex:
    def __init__(self, table: Table, blobs: BlobStore) -> None:
        self._table = table
        self._blobs = blobs

    # outputs -----------------------------------------------------------------------------
    def write_outputs(self, sv_id: str, ws: Workspace, outputs: Iterable[OutputValue]) -> tuple[str, ...]:
        items: list[dict[str, Any]] = []
        ids: list[str] = []
        for out in outputs:
            wos_id = new_id("wos")
            ids.append(wos_id)
            item: dict[str, Any] = {
                "pk": wos_id,
                "sk": "wos",
                "id": wos_id,
                "state_version_id": sv_id,
                "workspace_id": ws.id,
                "organization": ws.organization,
                "name": out.name,
                "sensitive": out.sensitive,
                "type": out.type,
                "detailed_type": json.dumps(out.detailed_type),
                "gsi1pk": f"{sv_id}#outputs",
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

    def outputs_of(self, sv_id: str) -> list[StoredOutput]:
        return [self._output(item) for item in self._table.query(f"{sv_id}#outputs", index="gsi1")]

    def output(self, wos_id: str) -> StoredOutput:
        item = self._table.get(wos_id, "wos") if looks_like(wos_id, "wos") else None
        if item is None:
            raise NotFound(f"state version output {wos_id} not found")
        return self._output(item)

    def delete_outputs(self, sv_id: str) -> None:
        items = self._table.query(f"{sv_id}#outputs", index="gsi1")
        for item in items:
            if "value_blob" in item:
                self._blobs.delete(item["value_blob"])
        self._table.batch_delete([(item["pk"], item["sk"]) for item in items])

    # resources ---------------------------------------------------------------------------
    def replace_resources(
        self,
        load: Callable[[], Workspace],
        instances_of: Callable[[str], tuple[ResourceInstance, ...]],
        attempts: int = 5,
    ) -> None:
        """Make the index match the workspace's current version; repeat if it changed meanwhile."""
        for _ in range(attempts):
            ws = load()
            target = ws.current_state_version_id
            instances = instances_of(target) if target else ()
            self._apply(ws, target or "", instances)
            if load().current_state_version_id == target:
                return

    def _apply(self, ws: Workspace, sv_id: str, instances: tuple[ResourceInstance, ...]) -> None:
        existing = {item["sk"]: item for item in self._table.query(f"{ws.id}#resources")}
        now = clock.now_iso()
        puts: list[dict[str, Any]] = []
        for inst in instances:
            old = existing.pop(inst.address, None)
            changed = old is None or old.get("digest") != inst.digest
            puts.append(
                {
                    "pk": f"{ws.id}#resources",
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
                    "gsi1pk": f"org#{ws.organization}#resources",
                    "gsi1sk": f"{ws.id}#{inst.address}",
                }
            )
        # Plain batch writes, not transactions: readers only show items tagged with the current version.
        self._table.batch_put(puts)
        self._table.batch_delete([(item["pk"], item["sk"]) for item in existing.values()])

    def resources(self, ws: Workspace) -> list[IndexedResource]:
        found = [_resource(item) for item in self._table.query(f"{ws.id}#resources")]
        return [r for r in found if ws.current_state_version_id and r.indexed_from == ws.current_state_version_id]

    def search(
        self, organization: str, readable: list[Workspace], text: str = "", type_: str = "", provider: str = ""
    ) -> list[IndexedResource]:
        current = {ws.id: ws.current_state_version_id for ws in readable if ws.current_state_version_id}
        text, provider = text.lower(), provider.lower()
        hits = []
        for item in self._table.query(f"org#{organization}#resources", index="gsi1"):
            res = _resource(item)
            if current.get(res.workspace_id) != res.indexed_from:
                continue
            if (type_ and res.type != type_) or (provider and provider not in res.provider.lower()):
                continue
            if text and not res.matches(text):
                continue
            hits.append(res)
        return hits

    def delete_resources(self, workspace_id: str) -> None:
        items = self._table.query(f"{workspace_id}#resources")
        self._table.batch_delete([(item["pk"], item["sk"]) for item in items])
