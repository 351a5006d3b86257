"""The run store's runner capacity item (`store.py`: `RunStore.slots`): one item (`runners#capacity` / `slots`)
holding the leases of the runners alive or starting, the organizations' turns and last activity, and when the
dispatcher last stopped for want of room (`runner_slots.py`); written only from the version read."""

from __future__ import annotations

from typing import Any

from terrace.adapters.table import Table

PK, SK = "runners#capacity", "slots"


class RunnerSlotStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    def read(self) -> tuple[dict[str, Any], int | None]:
        """The item's attributes and its version (None: never written; the attributes are then empty ones)."""
        item = self._table.get(PK, SK)
        if item is None:
            return {"pk": PK, "sk": SK, "leases": {}, "saturated_at": 0, "version": 0}, None
        return dict(item), int(item["version"])

    def write(self, item: dict[str, Any], version: int | None) -> None:
        """Write `item` as the next version of `version` (None: the first); raises ConditionFailed when another
        write came first."""
        item = {**item, "version": (version or 0) + 1}
        if version is None:
            self._table.put(item, if_absent=True)
        else:
            self._table.put(item, if_version=version)
