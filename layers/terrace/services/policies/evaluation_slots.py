"""How many policy sets of one organization are evaluated at once, across every events worker: a few slots per
organization, held in the table (one item per organization), so one organization's slow policies never occupy the
handlers every organization's post-plan stage needs — the embedded server's 8 event handler threads as much as the
events Lambda's instances, which share nothing but the table.

A slot is a lease taken by a conditional write on the item's version (of two workers that both see the last free
slot, one wins, the other re-reads and finds none) and given back when its set is done. A lease expires on its own
(`lease_s`: the set's whole budget, and a margin), so a worker killed mid-evaluation holds its slot no longer than
that. An evaluation that finds its organization's slots full does not wait for one: the worker puts its event back
with a delay (`evaluation_worker.py`). The item expires with its last lease (`expires_at`, the table's TTL).
"""

from __future__ import annotations

from typing import Any

from terrace.domain import clock
from terrace.services.optimistic import optimistic
from terrace.services.policies.store_evaluations import EvaluationStore

KEEP_S = 3600  # the item outlives its last lease this long (then the table's TTL removes it)


class EvaluationSlots:
    def __init__(self, store: EvaluationStore, per_organization: int, lease_s: float) -> None:
        self._store, self._per_organization, self._lease_s = store, per_organization, lease_s

    def _read(self, organization: str, now: float) -> tuple[dict[str, Any], int | None]:
        """The organization's slots with their expired leases left out, and the version they were read at."""
        item = self._store.slots(organization)
        if item is None:
            return {"leases": {}}, None
        leases = {lease: int(until) for lease, until in (item.get("leases") or {}).items() if int(until) > now}
        return {**item, "leases": leases}, int(item["version"])

    def _write(self, organization: str, item: dict[str, Any], version: int | None) -> None:
        until = max(item["leases"].values(), default=int(clock.epoch()))
        item = {**item, "version": (version or 0) + 1, "expires_at": until + KEEP_S}
        self._store.save_slots(organization, item, version)

    def acquire(self, organization: str, lease: str) -> bool:
        """Take one of `organization`'s slots for `lease` (a policy set of an evaluation); False when they are all
        held, `lease` itself included (another delivery of the same set is being evaluated)."""

        def step() -> bool:
            now = clock.epoch()
            item, version = self._read(organization, now)
            leases = item["leases"]
            if lease in leases or len(leases) >= self._per_organization:
                return False
            self._write(organization, {**item, "leases": {**leases, lease: int(now + self._lease_s) + 1}}, version)
            return True

        return optimistic(step, attempts=16, exhausted=lambda: False)

    def release(self, organization: str, lease: str) -> None:
        def step() -> None:
            item, version = self._read(organization, clock.epoch())
            if version is not None and lease in item["leases"]:  # (an expired lease is no longer counted anyway)
                leases = {k: v for k, v in item["leases"].items() if k != lease}
                self._write(organization, {**item, "leases": leases}, version)

        optimistic(step, attempts=16, exhausted=lambda: None)  # else its lease expires

    def held(self, organization: str) -> int:
        return len(self._read(organization, clock.epoch())[0]["leases"])
