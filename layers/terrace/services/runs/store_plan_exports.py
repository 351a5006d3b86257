"""The run store's plan exports (`domain/plan_exports.py`; `RunStore.plan_exports`): one item per export
(`pe-…` / `plan-export`), listed under its run (`<run>#plan-exports` on gsi1) so that a run's deletion finds them
(`store_deletion.py`). Every write is conditional on the item's `version`."""

from __future__ import annotations

import dataclasses
from typing import Any

from terrace.adapters.table import Table
from terrace.domain.plan_exports import PlanExport

SK = "plan-export"


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
    def __init__(self, table: Table) -> None:
        self._table = table

    def get(self, export_id: str) -> PlanExport | None:
        item = self._table.get(export_id, SK)
        return _from_item(item) if item else None

    def create(self, export: PlanExport) -> None:
        self._table.put(_to_item(export), if_absent=True)

    def save(self, export: PlanExport) -> None:
        """Write `export` as read (its `version`), changed: ConditionFailed when another writer came first."""
        read = export.version
        export.version = read + 1
        self._table.put(_to_item(export), if_version=read)

    def delete(self, export: PlanExport) -> None:
        self._table.delete(export.id, SK, if_version=export.version)

    def of_run(self, run_id: str) -> list[PlanExport]:
        return [_from_item(item) for item in self._table.query(of_run(run_id), index="gsi1")]
