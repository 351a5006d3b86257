"""The scaler, the dispatcher of the lanes: starts runners per organization for the runnable phases, in
priority order, within a global maximum.

Every phase that becomes runnable is sent to its lane (`RunScheduler.send_to_lane`; `adapters/lanes.py`). Each
tick reads the lanes without missing a queued phase (`lane_reads.py`: SQS's short poll may answer empty) and
drains them strictly in order, apply ▸ plan ▸ speculative (within a lane, organizations take turns:
`runner_turns.py`, which also tells a runner to hand its slot over when others wait), and
for each phase still queued makes sure a runner of its organization will take it: an idle live runner of that
organization (live, not running a phase, not already counted for another waiting phase), else a new one, within
`max_runners` (held in the table by `RunnerSlots`, so concurrent ticks cannot overshoot) and
`max_runners_per_organization`. When there is no room it stops taking from the lanes: under contention an apply
of any organization gets the next runner before a plan, and a plan before a speculative plan. It asks idle runners
of organizations with nothing to do to go, to make room; records the saturation (the reaper's queued deadline
follows the backlog); and releases the messages that still wait, so the next tick sees them again. A message is
deleted once its job is claimed or gone (a duplicate is deleted too), so stale messages are harmless; runners
never read the lanes: they claim their organization's jobs through the runner API (`JobService.next`).

A tick runs on a schedule and whenever something may need a runner: after every message sent to a lane (an
enqueue, a retry, the reaper's resend), when a runner task stops (on AWS), and when a
configuration version is created (`expect`): its run does not exist yet, but the runner's start (a Fargate
task, a Python process) then overlaps the upload. An expected organization counts, after the lanes, as needing
one runner until its run is queued (at most `EXPECT_S`).

Capacity per lane: a phase on one of the launcher's `spot_lanes` (on AWS the speculative lane: plans with no side
effects) gets a runner restricted to that lane, which the launcher starts on Fargate Spot; an interrupted one hands
its plan back to be retried (`runner/hand_back.py`). An idle restricted runner serves only its lanes; any other
serves every lane. Which runner runs which phase is not known here: the running phases are counted against the
runners that take every lane first (a plan may then get one runner too many, never one too few).

Each runner starts with a single-use enrollment code (`runner_credentials.py`), which also revokes the tokens of
runners that are gone.

Warm runners, with the room real demand leaves (`warm_window.py`): `warm_runners` (`terrace:warmRunners`) keeps
that many for every organization that had work within a day (`RunnerSlots.recent`); the warm window
(`warm_window_minutes`) keeps one, of plans only, for W minutes after an organization's activity (`warm`: a
workspace opened; `expect`; its demand). Runners serve one organization each: there is no pool any could use.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from terrace.adapters.definitions import LANE_PRIORITY
from terrace.adapters.lanes import LaneDelivery, Lanes
from terrace.adapters.runner_launcher import RunnerLauncher
from terrace.config import Settings
from terrace.domain import clock
from terrace.domain import runs as rs
from terrace.services.runs import warm_window as ww
from terrace.services.runs.lane_reads import read_lanes
from terrace.services.runs.runner_credentials import RunnerCredentials
from terrace.services.runs.runner_slots import RunnerSlots
from terrace.services.runs.runner_turns import take_turns
from terrace.services.runs.store import RunStore

log = logging.getLogger("terrace.scaler")
EXPECT_S = 120  # how long a created configuration version counts as a run to come (its upload may be slow)


class Scaler:
    def __init__(
        self,
        store: RunStore,
        launcher: RunnerLauncher | None,
        settings: Settings,
        lanes: Lanes,
        slots: RunnerSlots,
        credentials: RunnerCredentials,
        *,
        wake: threading.Event,
        warm_up: Callable[[], None] | None = None,
    ) -> None:
        self._store, self._settings = store, settings
        self._lanes, self._slots = lanes, slots
        self.credentials = credentials  # each runner's enrollment code, and the tokens of runners gone revoked
        self.launcher = launcher  # None: a tick only reports the demand (no runners here, e.g. a Lambda's API)
        # The local scaler loop sleeps on `wake` and ticks at once when it is set: by `expect`, and by every enqueue
        # (the composition root gives this same event to the job signal as an observer). On AWS: an invoke instead.
        self.wake = wake
        self._warm_up = warm_up  # AWS: readies the logs function as a window's signal is taken (`ww.take_wakes`)
        # (organization, lane: "speculative" or "") -> until when it counts as needing a runner
        self._expected: dict[tuple[str, str], float] = {}
        self._warm: set[str] = set()  # organizations whose workspace was opened since the last tick (`warm`)
        self._window_s = settings.warm_window_minutes * 60
        self._lock = threading.Lock()

    def expect(self, organization: str, speculative: bool = False) -> None:
        """A run of `organization` is coming (its configuration is being uploaded): a runner should start now; of
        the speculative lane when the configuration version is speculative (`terraform plan`: Spot on AWS)."""
        with self._lock:
            self._expected[(organization, "speculative" if speculative else "")] = clock.epoch() + EXPECT_S
        self.wake.set()

    def warm(self, organization: str) -> None:
        """A workspace of `organization` was opened (`WarmWindow.signal`): its warm window opens at the next tick."""
        with self._lock:
            self._warm.add(organization)
        self.wake.set()

    def _still_expected(self, demand: Counter[str], extra: Iterable[str], lane: str) -> list[tuple[str, str]]:
        """The expected organizations (with their lane), until a run of theirs is queued or running (or `EXPECT_S`
        passed)."""
        now = clock.epoch()
        with self._lock:
            for organization in extra:
                self._expected[(organization, lane)] = now + EXPECT_S
            self._expected = {
                key: until for key, until in self._expected.items() if until > now and demand[key[0]] == 0
            }
            return sorted(self._expected)

    def _drain(
        self, received: list[LaneDelivery], open_runs: dict[str, str], turns: dict[str, float] | None = None
    ) -> list[LaneDelivery]:
        """The lanes' phases still queued, in dispatch order; messages of claimed, gone or duplicate jobs deleted.
        `open_runs` must be read after `received`: a message is sent once its run is written, so a run read
        before it might be missing or still pending, and its message taken for a gone job's."""
        waiting: list[LaneDelivery] = []
        seen: set[str] = set()
        for lane in LANE_PRIORITY:
            kept = []
            for delivery in (d for d in received if d.lane == lane):
                message = delivery.message
                wanted = rs.PLAN_QUEUED if message.phase == "plan" else rs.APPLY_QUEUED
                if message.job_id in seen or open_runs.get(message.run_id) != wanted:
                    self._lanes.delete(delivery)  # claimed, gone, or a duplicate of one kept
                    continue
                seen.add(message.job_id)
                kept.append(delivery)
            waiting.extend(take_turns(kept, turns))
        return waiting

    def _runner_entries(self) -> list[dict[str, Any]]:
        """The open runs Terrace's runners serve: an agent pool's runs are its agents' (they neither need a runner
        nor make an idle one look busy)."""
        return [entry for entry in self._store.open_runs() if not entry.get("agent_pool_id")]

    def scale_once(
        self, expect: Iterable[str] = (), speculative: bool = False, warm: Iterable[str] = ()
    ) -> dict[str, Any]:
        """One tick; `expect`: organizations whose configuration version was just created (`speculative`: a
        speculative one); `warm`: organizations whose workspace was opened (their warm window opens), an invocation's
        signal: only those whose wake claim it takes count, and with none taken and nothing expected it does not tick
        (every API process signals on its own; the deployment ticks for an organization once per SIGNAL_EVERY_S)."""
        if signalled := list(warm):
            warm = ww.take_wakes(signalled, self._store.wake_claims.claim, self._warm_up)
            if not warm and not expect:
                return {"started": {}, "skipped": f"the warm windows of {signalled} were woken by another invocation"}
        if self.launcher is None:
            entries = self._runner_entries()
            running = Counter(e["organization"] for e in entries if e["status"] in rs.RUNNING)
            queued = Counter(e["organization"] for e in entries if e["status"] in rs.QUEUED)
            return {"demand": dict(running + queued), "live": None, "started": {}, "reason": "no launcher configured"}
        received, entries = read_lanes(self._lanes, self._runner_entries)
        waiting: list[LaneDelivery] | None = None
        try:
            running = Counter(e["organization"] for e in entries if e["status"] in rs.RUNNING)
            live_runners = self.launcher.live()
            live_ids = {runner.token_id for runner in live_runners}
            self.credentials.revoke_gone(live_ids)
            held = self._slots.reconcile(live_ids)
            queued = Counter(e["organization"] for e in entries if e["status"] in rs.QUEUED)
            expected = self._still_expected(running + queued, expect, "speculative" if speculative else "")
            waiting = self._drain(received, {e["run_id"]: e["status"] for e in entries}, self._slots.turns())
            with self._lock:
                opened, self._warm = self._warm | set(warm), set()
            return self._dispatch(waiting, running, live_runners, held, expected, opened)
        finally:
            for delivery in received if waiting is None else waiting:  # the next tick sees what still waits
                self._lanes.release(delivery)

    def _dispatch(
        self,
        waiting: list[LaneDelivery],
        running: Counter[str],
        live_runners: list[Any],
        held: int,
        expected: list[tuple[str, str]],
        opened: set[str],
    ) -> dict[str, Any]:
        assert self.launcher is not None
        demand = running + Counter(d.message.organization for d in waiting)
        order: list[tuple[str, str | None]] = [(d.message.organization, d.lane) for d in waiting]
        order += [(org, lane or None) for org, lane in expected if demand[org] == 0]
        demand.update({org: 1 for org, _ in order if demand[org] == 0})
        if self._settings.warm_runners > 0:
            self._slots.touch(+demand)  # the organizations that keep warm runners
        if self._window_s:  # the organizations whose window opens (or moves on) now
            self._slots.open_windows(set(+demand) | opened, int(clock.epoch()) + self._window_s)
        live = Counter(runner.organization for runner in live_runners)
        idle_any, restricted = ww.idle_runners(running, live_runners)
        spot_lanes = set(getattr(self.launcher, "spot_lanes", ()))  # a launcher without Spot: none
        per_org = self._settings.max_runners_per_organization or self._settings.max_runners
        room = max(0, self._settings.max_runners - max(held, sum(live.values())))
        started: dict[str, int] = {}
        failures = retired = spot = 0
        blocked = 0  # phases left waiting for want of room
        for position, (org, lane) in enumerate(order):
            on_spot = lane in spot_lanes
            taken = ww.take_restricted(restricted, org, lane)
            if taken and (lane != "plan" or room <= 0):
                continue  # an idle runner of its lane will take it (a plan's apply needs one that takes applies)
            if idle_any[org] > 0:
                idle_any[org] -= 1  # an idle runner of the organization will take it
                continue
            if live[org] + started.get(org, 0) >= per_org:
                continue  # its organization's own maximum: it waits for one of its runners
            wait_s = ww.APPLY_WAIT_S if taken else 0  # for the apply of a plan a warm runner took: it waits for it
            launched = self._start(org, lanes=(lane,) if on_spot and lane else (), warm_s=wait_s) if room > 0 else None
            if launched is None:  # no room: stop taking from the lanes
                blocked = len(order) - position
                idle = idle_any + Counter({o: len(lanes) for o, lanes in restricted.items()})
                retired = self._make_room(blocked, idle, demand)
                self._slots.saturated()
                break
            if not launched:
                failures += 1
                continue
            started[org] = started.get(org, 0) + 1
            spot += int(on_spot)
            room -= 1
        warm = self._keep_warm(room, live, started, per_org) if not blocked else {}
        window: dict[str, int] = {}
        if self._window_s and not blocked:  # one runner per open window, with the room left
            room, begun = room - sum(warm.values()), Counter(started) + Counter(warm)
            window = ww.start_window_runners(self._slots.windows(), live, begun, room, self._start_for_window)
        if started or warm or window:
            log.info("started runners %s (warm %s, window %s) for demand %s (live %s)",
                     started, warm, window, dict(demand), dict(live))  # fmt: skip
        return {
            "demand": dict(demand),
            "live": dict(live),
            "started": started,
            "started_for_spot_lanes": spot,
            "warm": warm,
            "window": window,
            "retired": retired,
            "backlog": len(waiting),
            "blocked": blocked,
            "launch_failures": failures,
        }

    def _make_room(self, wanted: int, idle: Counter[str], demand: Counter[str]) -> int:
        """Ask up to `wanted` idle runners of organizations with nothing to do to go: their slots come back."""
        retired = 0
        for org in sorted(idle):
            if retired >= wanted:
                break
            if demand[org] == 0 and idle[org] > 0:
                retired += self.launcher.retire(org, min(idle[org], wanted - retired)) if self.launcher else 0
        return retired

    def _keep_warm(self, room: int, live: Counter[str], started: dict[str, int], per_org: int) -> dict[str, int]:
        """With the room real demand left: top every organization that had work within a day up to its warm
        runners (the most recently active first)."""
        wanted = min(self._settings.warm_runners, per_org)
        if wanted <= 0:
            return {}
        start = lambda org: self._start(org, keep_warm=True)  # noqa: E731
        return ww.keep_warm_runners(self._slots.recent(), wanted, room, live, started, start)

    def _start_for_window(self, organization: str) -> bool | None:
        return self._start(organization, lanes=ww.WARM_LANES, warm_s=self._window_s)

    def _start(
        self, organization: str, keep_warm: bool = False, lanes: tuple[str, ...] = (), warm_s: int = 0
    ) -> bool | None:
        """Launch one runner of `organization` (taking only `lanes`' jobs, if any; `warm_s`: a warm window's):
        True when started, False when the launch failed, None when no slot was free."""
        assert self.launcher is not None
        binds = bool(getattr(self.launcher, "binds_identity", False))
        credential = self.credentials.issue(organization, keep_warm, lanes, warm_s, bound=binds)
        if not self._slots.acquire(credential.token_id, organization):
            self.credentials.cancel(credential)
            return None
        started = self.launcher.launch([credential])
        if credential.token_id not in started:
            log.warning("could not start a runner for %s", organization)
            self._slots.release(credential.token_id)
            self.credentials.cancel(credential)
            return False
        identity = started.get(credential.token_id)
        if identity:
            self.credentials.bind(credential, identity)
        return True
