"""The run store's runner capacity item (`store.py`: `RunStore.slots`): one item (`runners#capacity` / `slots`)
holding the leases of the runners alive or starting, the organizations' turns and last activity, and when the
dispatcher last stopped for want of room (`runner_slots.py`); written only from the version read. Beside it, the
warm window's wake claims (`runners#wake` / the organization: `WakeClaimStore`, `RunStore.wake_claims`)."""

from __future__ import annotations

from typing import Any

from terrace.adapters.table import ConditionFailed, Table

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


WAKE_PK = "runners#wake"  # one item per organization: `sk` its name


class WakeClaimStore:
    """The warm window's wake claims (`warm_window.py: take_wakes`): an item per organization, `until` when its last
    wake of the dispatcher holds (epoch seconds; `expires_at` lets the table's TTL drop it a day later). Written by
    the dispatcher only (a scaler invocation carrying a warm signal), never by a read: every scaler invocation of a
    deployment shares it, so the signals of an organization's reads, one per API process, make one tick per
    interval."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def claim(self, organization: str, now: float, hold_s: float) -> float | None:
        """Take the wake of `organization` at `now` for `hold_s`: None when this conditional write won (tick), else
        until when another invocation's claim holds."""
        item = self._table.get(WAKE_PK, organization)
        if item is not None and now < float(item["until"]):
            return float(item["until"])
        until = now + hold_s
        version = int((item or {}).get("version", 0))
        claim = {"pk": WAKE_PK, "sk": organization, "until": until, "version": version + 1}
        claim["expires_at"] = int(until) + 24 * 3600
        try:
            if item is None:
                self._table.put(claim, if_absent=True)
            else:
                self._table.put(claim, if_version=version)
        except ConditionFailed:  # another invocation claimed it between the read and the write
            again = self._table.get(WAKE_PK, organization)
            return float(again["until"]) if again is not None else until
        return None
