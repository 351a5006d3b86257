"""The run store's health assessments (`store.py`: `RunStore.assessments`): the schedule's sparse index
(`domain/assessments.py` names its entries: one under `assessments#schedule` per workspace with assessments on,
one per organization enforcing them), the results (`asmtres-…`, sort key `assessment-result`) and each workspace's
pointer to its current result (`<workspace>` / `assessment#current`). The assessment runs themselves are runs
(`RunStore.latest_assessment`)."""

from __future__ import annotations

import dataclasses
from typing import Any

from terrace.adapters.table import Put, Table
from terrace.domain.assessments import RESULT_PREFIX, AssessmentResult
from terrace.services.shared_keys import SCHEDULE_PK, schedule_item, schedule_key
from terrace.services.shared_keys import organization_schedule_key as organization_key


def result_key(result_id: str) -> tuple[str, str]:
    return result_id, "assessment-result"


def current_key(workspace_id: str) -> tuple[str, str]:
    return workspace_id, "assessment#current"


def result_to_item(result: AssessmentResult) -> dict[str, Any]:
    pk, sk = result_key(result.id)
    return {"pk": pk, "sk": sk, **dataclasses.asdict(result)}


def result_from_item(item: dict[str, Any]) -> AssessmentResult:
    names = {f.name for f in dataclasses.fields(AssessmentResult)}
    data = {k: v for k, v in item.items() if k in names}
    data["checks"] = {str(k): int(v) for k, v in (data.get("checks") or {}).items()}
    return AssessmentResult(**data)


class AssessmentStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    # the schedule ------------------------------------------------------------------------------------
    def schedule(self) -> list[dict[str, Any]]:
        """Every entry of the schedule (one query; a workspace's `sk` is its id, an organization's `org#<key>`)."""
        return self._table.query(SCHEDULE_PK)

    def put_entry(self, entry: dict[str, Any]) -> None:
        """Write a schedule entry as read, changed."""
        self._table.put(entry)

    def schedule_workspace(
        self, workspace_id: str, organization: str, enabled_at: float, due_at: float | None = None
    ) -> None:
        self._table.put(schedule_item(workspace_id, organization, enabled_at, due_at))

    def unschedule(self, workspace_id: str) -> None:
        self._table.delete(*schedule_key(workspace_id))

    def enforced(self, organization: str) -> bool:
        """Whether the organization enforces assessments on every workspace (its schedule entry exists)."""
        return self._table.get(*organization_key(organization)) is not None

    # results -----------------------------------------------------------------------------------------
    def record(self, result: AssessmentResult) -> None:
        """The result, made its workspace's current one, in one transaction; raises ConditionFailed when the
        result is recorded already (a redelivered event)."""
        pk, sk = current_key(result.workspace_id)
        self._table.transact(
            [Put(result_to_item(result), if_absent=True), Put({"pk": pk, "sk": sk, "result_id": result.id})]
        )

    def current_id(self, workspace_id: str) -> str | None:
        pointer = self._table.get(*current_key(workspace_id))
        return str(pointer["result_id"]) if pointer else None

    def find(self, result_id: str) -> AssessmentResult | None:
        """None for an id that is not a result's (nothing read) or a result not stored."""
        item = self._table.get(*result_key(result_id)) if result_id.startswith(RESULT_PREFIX) else None
        return result_from_item(item) if item else None

    def current_of(self, workspace_ids: list[str]) -> dict[str, AssessmentResult]:
        """The current result of each workspace that has one (two batch reads)."""
        pointers = self._table.batch_get([current_key(w) for w in workspace_ids])
        ids = [result_key(str(p["result_id"])) for p in pointers]
        return {r.workspace_id: r for r in (result_from_item(i) for i in self._table.batch_get(ids))}
