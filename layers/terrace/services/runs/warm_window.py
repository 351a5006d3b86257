"""The warm window: one runner kept for `warm_window_minutes` after an organization's activity, so the run that
follows starts on a runner already polling instead of waiting 15-30 s for a Fargate task (docs/performance.md,
"The first-run model and the warm-runner window").

Activity is what precedes a run: a workspace opened by a person or a CLI (`terraform init` and `plan` read `GET
/organizations/:org/workspaces/:name` first; the UI's workspace page), a configuration version created, a run queued or
running. `WarmWindow.signal` is the API's side: after the read was allowed (the caller got the workspace through
`WorkspaceService.open_by_name`, which checks its principal), the read of a remote-execution workspace by a user or a
team who may queue its runs (a reader who may not cannot start the run the window waits for) wakes the dispatcher with
the organization, at most once per organization per SIGNAL_EVERY_S in a process (a caller's reads are looked at once per
SIGNAL_EVERY_S too), and off the request's thread where waking is a call (AWS: an async invoke of the scaler Lambda), so
the read answers as fast as without it. The read writes nothing, on any thread: reads never write.

Where processes are many (AWS: every API Lambda instance sends its own wake, at most one a minute per organization),
the once per SIGNAL_EVERY_S of the whole deployment is the dispatcher's: a scaler invocation that carries a warm signal
takes the organization's wake claim (`take_wakes`: a conditional write, `store_slots.py: WakeClaimStore`) and, when
another invocation holds it, returns without a tick; the winner readies the logs function (`warm_up`) and ticks. The
tick (`scaler.py`, with `start_window_runners`): the organizations signalled, expected or with demand have their
window moved to now + W (`RunnerSlots.open_windows`, in the table, so every scaler Lambda sees it); with the room real
demand left, each organization whose window is open and which has no runner at all gets one, never more, the latest
window first.

A window's runner is an ordinary runner of its organization: enrolled with its own single-use code, bound to that
organization, claiming only that organization's jobs through the runner API, holding no variable or secret until
it claims a job. It is not a pool runner that any organization could use: the runner that served one
organization's untrusted run must never serve another's, and an organization's read cannot make another
organization's runner start. It takes plans only (WARM_LANES: a plan, speculative or not, changes nothing, so an
interruption hands it back: `runner/hand_back.py`), runs on FARGATE_SPOT (FARGATE when Spot has none), exits after
W idle minutes (`TERRACE_RUNNER_IDLE_EXIT_S`) and polls every half second meanwhile. The apply of a plan it took
goes to a
runner that takes applies, on FARGATE, started when the plan was queued (`scaler.py`) and waiting APPLY_WAIT_S for it
once up, so it is ready when the plan ends or is confirmed within that.
A warm runner counts within `max_runners` and gives way to demand: with no room, the dispatcher retires idle
runners of organizations with nothing queued, window or not.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from terrace.domain import clock
from terrace.domain.principal import Principal, PrincipalKind
from terrace.domain.workspace import Workspace

log = logging.getLogger("terrace.scaler")

# a process wakes the dispatcher for one organization's reads at most this often, and the deployment's dispatcher
# ticks for one organization's signals at most this often (`take_wakes`)
SIGNAL_EVERY_S = 60
OPENERS = frozenset({PrincipalKind.USER, PrincipalKind.TEAM})  # people and their CLIs, CI pipelines' team tokens
WARM_LANES = ("plan", "speculative")  # what a window's runner takes: plans, which an interruption may cut
# the runner started for the apply of a plan a window's runner took waits this long for it (not the usual 10 s):
# the plan, or the person confirming it, takes longer than that runner's start
APPLY_WAIT_S = 120
_MAX_TRACKED = 10_000  # organizations remembered for the once-a-minute rule before old entries are dropped
_background: ThreadPoolExecutor | None = None
_background_lock = threading.Lock()


def _in_background(call: Callable[[], None]) -> None:
    global _background
    with _background_lock:
        if _background is None:
            _background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="warm-window")
    _background.submit(call)


class WarmWindow:
    def __init__(
        self,
        window_minutes: int,
        execution_mode: Callable[[Workspace], str],
        may_queue: Callable[[Principal, Workspace], bool],
        wake: Callable[[str], None],
        *,
        background: bool = False,
    ) -> None:
        self.window_s = window_minutes * 60
        self._execution_mode = execution_mode  # the workspace's own or its organization's default
        self._may_queue = may_queue  # the caller may queue a run of it (the Authorizer's decision)
        # background: the check and `wake` run off the caller's thread (a table read, a call that takes a while)
        self._wake, self._background = wake, background
        self._sent: dict[str, float] = {}  # organization -> when the dispatcher was last woken for it
        self._checked: dict[tuple[str, str, str], float] = {}  # (organization, caller) -> when last looked at
        self._lock = threading.Lock()

    def signal(self, principal: Principal, ws: Workspace) -> None:
        """`principal` opened `ws` (it was allowed to read it): wake the dispatcher for its organization's window.
        Never raises: a read must not fail for its signal."""
        if not self.window_s or principal.kind not in OPENERS:
            return
        caller = (ws.organization, principal.kind.value, principal.subject_id)
        with self._lock:  # the organization woken lately, or this caller looked at lately: nothing to do
            if self._recent(self._sent, ws.organization) or self._recent(self._checked, caller):
                return
            self._checked[caller] = clock.epoch()
        if self._background:
            _in_background(lambda: self._wake_for(principal, ws))
        else:
            self._wake_for(principal, ws)

    def _recent(self, seen: dict[Any, float], key: Any) -> bool:
        """Whether `key` was recorded within SIGNAL_EVERY_S (old entries go once `seen` grows large)."""
        now = clock.epoch()
        if len(seen) >= _MAX_TRACKED:
            for old in [k for k, at in seen.items() if now - at >= SIGNAL_EVERY_S]:
                del seen[old]
        return now - seen.get(key, float("-inf")) < SIGNAL_EVERY_S

    def _wake_for(self, principal: Principal, ws: Workspace) -> None:
        try:
            if self._execution_mode(ws) in ("local", "agent"):
                return  # its runs run on a laptop or an agent: no runner of ours to warm
            if not self._may_queue(principal, ws):
                return  # a reader who cannot start a run: nothing to warm for
            now = clock.epoch()
            with self._lock:
                if self._recent(self._sent, ws.organization):
                    return
                self._sent[ws.organization] = now
            self._wake(ws.organization)  # AWS: the scaler takes the deployment's claim (`take_wakes`)
        except Exception:  # the next activity, a configuration version or the schedule still start a runner
            log.exception("could not wake the dispatcher for %s's warm window", ws.organization)


def take_wakes(
    organizations: Iterable[str],
    claim: Callable[[str, float, float], float | None],
    warm_up: Callable[[], None] | None = None,
) -> list[str]:
    """The dispatcher's side of a warm signal (a scaler invocation carrying `warm`): the organizations whose wake
    this invocation claimed, at most one per organization per SIGNAL_EVERY_S in the deployment however many API
    processes signalled (`claim`: `WakeClaimStore.claim`, None when this conditional write won). Each one won readies
    the logs function (`warm_up`: on AWS an async invoke), so the CLI's first log read finds it started. A claim that
    cannot be written (the table throttled) counts as won: a tick too many costs less than a window missed."""
    won: list[str] = []
    for organization in dict.fromkeys(organizations):
        try:
            held = claim(organization, clock.epoch(), SIGNAL_EVERY_S)
        except Exception:
            log.exception("could not claim the wake of %s's warm window; waking it anyway", organization)
            held = None
        if held is not None:
            continue  # another invocation woke the dispatcher for it within SIGNAL_EVERY_S
        won.append(organization)
        if warm_up is not None:
            try:
                warm_up()
            except Exception:  # the CLI's first log read then pays the logs function's cold start
                log.exception("could not warm the logs function up for %s", organization)
    return won


def start_window_runners(
    windows: list[str], live: Counter[str], started: dict[str, int], room: int, start: Callable[[str], Any]
) -> dict[str, int]:
    """With `room` left by real demand, one runner for each organization of `windows` (latest first) that has no
    runner live or just started; `start` returns True when one started, False or None when it did not (then no
    more are tried this tick)."""
    warm: dict[str, int] = {}
    for organization in windows:
        if room <= 0:
            break
        if live[organization] + started.get(organization, 0) > 0:
            continue
        if not start(organization):
            break
        warm[organization] = 1
        room -= 1
    return warm


def keep_warm_runners(
    recent: list[str],
    wanted: int,
    room: int,
    live: Counter[str],
    started: dict[str, int],
    start: Callable[[str], Any],
) -> dict[str, int]:
    """`terrace:warmRunners` (a warm day, not a window): with `room` left by real demand, every organization of
    `recent` (the most recently active first) topped up to `wanted` runners."""
    warm: dict[str, int] = {}
    for org in recent:
        while room > 0 and live[org] + started.get(org, 0) + warm.get(org, 0) < wanted:
            if not start(org):
                return warm
            warm[org] = warm.get(org, 0) + 1
            room -= 1
    return warm


def idle_runners(
    running: Counter[str], live_runners: list[Any]
) -> tuple[Counter[str], dict[str, list[tuple[str, ...]]]]:
    """Per organization: how many idle runners take every lane, and the lanes of each idle runner restricted to some
    (a Spot runner's, a warm window's). A running phase is counted against the first kind first (pessimistic for
    it, exact in total)."""
    any_lane = Counter(runner.organization for runner in live_runners if not runner.lanes)
    idle_any = Counter({org: max(0, any_lane[org] - running[org]) for org in any_lane})
    busy = Counter({org: max(0, running[org] - any_lane[org]) for org in running})
    restricted: dict[str, list[tuple[str, ...]]] = {}
    for runner in (r for r in live_runners if r.lanes):
        if busy[runner.organization] > 0:
            busy[runner.organization] -= 1
            continue
        restricted.setdefault(runner.organization, []).append(tuple(runner.lanes))
    return idle_any, restricted


def take_restricted(restricted: dict[str, list[tuple[str, ...]]], organization: str, lane: str | None) -> bool:
    """Counts one idle restricted runner of `organization` that takes `lane` as taken; False when there is none."""
    for position, lanes in enumerate(restricted.get(organization, [])):
        if lane and lane in lanes:
            del restricted[organization][position]
            return True
    return False
