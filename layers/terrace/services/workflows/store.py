"""The one item the use cases keep of their own: the retention sweep's claim (`retention#sweep`, `last`), which makes
one process of many sweep each hour. Its key and its conditional writes live here, as every area's live in its
store."""

from __future__ import annotations

from terrace.adapters.table import ConditionFailed, Table

_SWEEP_CLAIM = ("retention#sweep", "last")


class SweepClaimStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    def claim(self, now: float, interval_s: float) -> bool:
        """Whether this process takes the sweep due at `now`: the last sweep (of any process) is `interval_s` old
        and this conditional write of the claim won."""
        item = self._table.get(*_SWEEP_CLAIM)
        if item is not None and now - float(item["at"]) < interval_s:
            return False
        claim = {"pk": _SWEEP_CLAIM[0], "sk": _SWEEP_CLAIM[1], "at": now, "version": (item or {}).get("version", 0) + 1}
        try:
            if item is None:
                self._table.put(claim, if_absent=True)
            else:
                self._table.put(claim, if_version=item["version"])
        except ConditionFailed:
            return False  # another process claimed this sweep
        return True
