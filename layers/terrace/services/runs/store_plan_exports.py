"""The run store's plan exports (`domain/plan_exports.py`; `RunStore.plan_exports`): one item per export
(`pe-…` / `plan-export`), listed under its run (`<run>#plan-exports` on gsi1) so that a run's deletion finds them
(`store_deletion.py`). A finished export's bundle is also listed under `plan-exports#expiring`, sorted by when it
expires (`<expiry>#<export>`), for the sweep that deletes expired bundles. Every write of an export is conditional
on its `version`. A new export's request to write its bundle is staged in the outbox in the export's own
transaction and published right after (the reaper's outbox sweep publishes it when that publish failed)."""

from __future__ import annotations

import dataclasses
from typing import Any

from terrace.adapters.table import Put, Table
from terrace.domain.plan_exports import PlanExport, expiry
from terrace.services.outbox_relay import OutboxRelay

SK = "plan-export"
EXPIRING = "plan-exports#expiring"


def _expiring_sk(export: PlanExport) -> str | None:
    ends = expiry(export)
    return f"{ends}#{export.id}" if ends and export.blob_key else None


def of_run(run_id: str) -> str:
    return f"{run_id}#plan-exports"


def _to_item(export: PlanExport) -> dict[str, Any]:
    return {
        **dataclasses.asdict(export),
        "pk": export.id,
        "sk": SK,
        "gsi1pk": of_run(export.run_id),
        "gsi1sk": export.created_at + export.id,
    }


def _from_item(item: dict[str, Any]) -> PlanExport:
    names = {f.name for f in dataclasses.fields(PlanExport)}
    return PlanExport(**{k: v for k, v in item.items() if k in names})


class PlanExportStore:
    def __init__(self, table: Table, relay: OutboxRelay) -> None:
        self._table, self._relay = table, relay

    def get(self, export_id: str) -> PlanExport | None:
        item = self._table.get(export_id, SK)
        return _from_item(item) if item else None

    def create(self, export: PlanExport, event: dict[str, Any]) -> None:
        """Record `export` with `event` (its request) in one transaction, then publish the event."""
        entry, staged = self._relay.outbox.stage(event)
        self._table.transact([Put(_to_item(export), if_absent=True), staged])
        self._relay.deliver([entry])  # a failed publish stays staged for the reaper's sweep

    def save(self, export: PlanExport) -> None:
        """Write `export` as read (its `version`), changed: ConditionFailed when another writer came first. A
        finished one's bundle is listed for the expiry sweep in the same transaction."""
        read = export.version
        export.version = read + 1
        ops = [Put(_to_item(export), if_version=read)]
        if (sk := _expiring_sk(export)) is not None:
            ops.append(Put({"pk": EXPIRING, "sk": sk, "export_id": export.id, "blob_key": export.blob_key}))
        self._table.transact(ops)

    def delete(self, export: PlanExport) -> None:
        if (sk := _expiring_sk(export)) is not None:
            self._table.delete(EXPIRING, sk)
        self._table.delete(export.id, SK)

    def expiring(self, before: str) -> list[tuple[str, str]]:
        """(entry, bundle key) of every listed bundle whose export expired before `before` (one query)."""
        return [
            (str(item["sk"]), str(item["blob_key"])) for item in self._table.query(EXPIRING) if str(item["sk"]) < before
        ]

    def forget_expiring(self, entry: str) -> None:
        self._table.delete(EXPIRING, entry)

    def of_run(self, run_id: str) -> list[PlanExport]:
        return [_from_item(item) for item in self._table.query(of_run(run_id), index="gsi1")]
