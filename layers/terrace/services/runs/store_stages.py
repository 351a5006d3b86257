"""The run store's task stages (`store.py`: `RunStore.stages`): one item each (`ts-<run suffix>-<n>`, sort key
`ts`), listed per run through gsi1 (`<run>#task-stages`, in stage order), written only if absent or from the
version read; and the read of an organization's stage-usage markers (`domain/stage_usage.py`)."""

from __future__ import annotations

import dataclasses
from typing import Any

from terrace.adapters.table import ConditionFailed, Table
from terrace.domain.task_stages import STAGES, TaskStage, run_of_stage
from terrace.services import shared_keys

SORT_KEY = "ts"


def stage_to_item(stage: TaskStage) -> dict[str, Any]:
    item = dataclasses.asdict(stage)
    item.update(
        {
            "pk": stage.id,
            "sk": SORT_KEY,
            "gsi1pk": f"{stage.run_id}#task-stages",
            "gsi1sk": str(STAGES.index(stage.stage) + 1),
        }
    )
    return item


def stage_from_item(item: dict[str, Any]) -> TaskStage:
    names = {f.name for f in dataclasses.fields(TaskStage)}
    return TaskStage(**{k: v for k, v in item.items() if k in names})


class TaskStageStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    def find(self, stage_id: str) -> TaskStage | None:
        """None for an id that names no run's stage (nothing read) or a stage not stored."""
        if run_of_stage(stage_id) is None:
            return None
        item = self._table.get(stage_id, SORT_KEY)
        return stage_from_item(item) if item else None

    def many(self, stage_ids: list[str]) -> list[TaskStage]:
        """The stored stages of `stage_ids` (one batch read), in no particular order."""
        return [stage_from_item(i) for i in self._table.batch_get([(sid, SORT_KEY) for sid in stage_ids])]

    def of_run(self, run_id: str) -> list[TaskStage]:
        """Every stage stored for a run, in stage order (one query)."""
        return [stage_from_item(i) for i in self._table.query(f"{run_id}#task-stages", index="gsi1")]

    def save(self, stage: TaskStage, *, new: bool = False) -> None:
        """A conditional write (new: absent; else: the version read, the stage's version then the next one).
        Raises ConditionFailed, the stage's version unchanged."""
        expected = stage.version
        if not new:
            stage.version = expected + 1
        try:
            self._table.put(stage_to_item(stage), if_absent=new, if_version=None if new else expected)
        except ConditionFailed:
            stage.version = expected
            raise

    def usage_markers(self, organization: str) -> list[str]:
        """The kinds of the organization's stage-usage markers (one query)."""
        return [str(item["sk"]) for item in self._table.query(shared_keys.stage_usage_partition(organization))]
