"""Runner capacity held in the table (the run store's `store_slots.py`): one item whose leases are the runners
alive or starting, written conditionally, so concurrent dispatcher ticks (two scaler Lambdas woken by one burst)
never start more than `max_runners` between them, whatever a lagging `ListTasks` says.

A lease is taken before a runner is launched (a conditional write on the item's version: of two ticks that
both see the last free slot, one wins, the other re-reads and finds none), given back when its launch failed,
and dropped by `reconcile` once its runner is no longer live: at once for a runner the listing showed live before
(`seen`: it exited, its slot goes to the next phase now), after a grace for one never listed yet (a task just
started may not be listed yet). The item also records when the dispatcher last stopped for want of room
(`saturated_at`): the reaper's queued deadline counts from then, so a run that merely waited behind a burst is
not errored. With warm runners configured it records when each organization last had work (`active`, at most
every ACTIVE_WRITE_S): the organizations that ran within RECENT_S keep theirs. With a warm window configured it
records until when each organization keeps one runner (`windows`: `warm_window.py`), moved forward at most every
WINDOW_WRITE_S.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from terrace.domain import clock
from terrace.services.optimistic import optimistic
from terrace.services.runs.store_slots import RunnerSlotStore

GRACE_S = 120  # a lease whose runner was never listed live is kept this long (the task may not be listed yet)
SATURATED_WRITE_S = 30  # `saturated_at` is written at most this often
ACTIVE_WRITE_S = 600  # an organization's last activity is written at most this often
RECENT_S = 24 * 3600  # an organization that had work this recently keeps its warm runners
WINDOW_WRITE_S = 60  # an organization's warm window is moved forward at most this often


class RunnerSlots:
    def __init__(self, store: RunnerSlotStore, max_runners: int) -> None:
        self._store, self._max = store, max_runners

    def _read(self) -> tuple[dict[str, Any], int | None]:
        return self._store.read()

    def _write(self, item: dict[str, Any], version: int | None) -> None:
        self._store.write(item, version)

    def held(self) -> int:
        return len(self._read()[0]["leases"])

    def acquire(self, lease: str, organization: str = "") -> bool:
        """Take a slot for the runner `lease` names (its token id); False when every slot is held. The
        `organization`'s turn is recorded (`turns`: the dispatcher serves the one whose turn is oldest first)."""

        def step() -> bool:
            item, version = self._read()
            leases = dict(item["leases"])
            if lease in leases:
                return True
            if len(leases) >= self._max:
                return False
            now_ms = int(clock.epoch() * 1000)
            leases[lease] = now_ms // 1000
            turns = {org: int(at) for org, at in item.get("turns", {}).items() if now_ms - int(at) < RECENT_S * 1000}
            if organization:
                turns[organization] = now_ms
            self._write({**item, "leases": leases, "turns": turns}, version)
            return True

        return optimistic(step, attempts=16, exhausted=lambda: False)

    def release(self, lease: str) -> None:
        def step() -> None:
            item, version = self._read()
            if lease in item["leases"]:
                leases = {k: v for k, v in item["leases"].items() if k != lease}
                seen = [k for k in item.get("seen", ()) if k != lease]
                self._write({**item, "leases": leases, "seen": seen}, version)

        optimistic(step, attempts=16, exhausted=lambda: None)

    def reconcile(self, live: Iterable[str]) -> int:
        """Keeps the leases of the live runners, and those of runners never listed live yet taken in the last
        GRACE_S; a runner listed live before and now gone gives its slot back at once. Returns how many are held."""
        alive = set(live)

        def step() -> int:
            item, version = self._read()
            now = int(clock.epoch())
            seen = set(item.get("seen", ()))
            leases = {
                k: v for k, v in item["leases"].items() if k in alive or (k not in seen and now - int(v) <= GRACE_S)
            }
            leases.update({k: now for k in alive if k not in leases})  # started before the counter, or by hand
            still_seen = sorted((seen | alive) & set(leases))
            if leases != item["leases"] or still_seen != sorted(seen):
                self._write({**item, "leases": leases, "seen": still_seen}, version)
            return len(leases)

        return optimistic(step, attempts=16, exhausted=lambda: self.held())

    def turns(self) -> dict[str, float]:
        """When each organization last had a runner started (epoch milliseconds; entries older than RECENT_S are
        dropped as the next runner starts)."""
        return {org: float(at) for org, at in self._read()[0].get("turns", {}).items()}

    def saturated(self) -> None:
        """The dispatcher left phases waiting for want of room (recorded at most every SATURATED_WRITE_S)."""

        def step() -> None:
            item, version = self._read()
            now = int(clock.epoch())
            if now - int(item.get("saturated_at", 0)) >= SATURATED_WRITE_S:
                self._write({**item, "saturated_at": now}, version)

        optimistic(step, attempts=4, exhausted=lambda: None)

    def saturated_at(self) -> int:
        """When the dispatcher last left phases waiting for want of room (epoch seconds; 0: never)."""
        return int(self._read()[0].get("saturated_at", 0))

    def touch(self, organizations: Iterable[str]) -> None:
        """`organizations` have work now: record it (an entry older than ACTIVE_WRITE_S is rewritten, one older
        than RECENT_S is dropped)."""
        wanted = set(organizations)

        def step() -> None:
            item, version = self._read()
            now = int(clock.epoch())
            active = {org: int(at) for org, at in item.get("active", {}).items() if now - int(at) < RECENT_S}
            stale = {org for org in wanted if now - active.get(org, 0) >= ACTIVE_WRITE_S}
            if stale or len(active) != len(item.get("active", {})):
                self._write({**item, "active": {**active, **dict.fromkeys(stale, now)}}, version)

        if wanted:
            optimistic(step, attempts=4, exhausted=lambda: None)

    def recent(self) -> list[str]:
        """The organizations that had work within RECENT_S, most recent first."""
        now = int(clock.epoch())
        active = self._read()[0].get("active", {})
        return sorted((org for org, at in active.items() if now - int(at) < RECENT_S), key=lambda o: -int(active[o]))

    def open_windows(self, organizations: Iterable[str], until: int) -> None:
        """Each of `organizations` keeps a warm runner until `until` (epoch seconds): its window is moved forward
        unless it already reaches within WINDOW_WRITE_S of it; windows that ended are dropped."""
        wanted = set(organizations)

        def step() -> None:
            item, version = self._read()
            now = int(clock.epoch())
            windows = {org: int(end) for org, end in item.get("windows", {}).items() if int(end) > now}
            moved = {org: until for org in wanted if until - windows.get(org, 0) >= WINDOW_WRITE_S}
            if moved or len(windows) != len(item.get("windows", {})):
                self._write({**item, "windows": {**windows, **moved}}, version)

        if wanted:
            optimistic(step, attempts=4, exhausted=lambda: None)

    def windows(self) -> list[str]:
        """The organizations whose warm window is open, the latest to end first."""
        now = int(clock.epoch())
        windows = self._read()[0].get("windows", {})
        return sorted((org for org, end in windows.items() if int(end) > now), key=lambda o: -int(windows[o]))
