"""Organizations take turns on the runners when capacity is short.

A runner serves one organization for its life, so with every slot held a runner would keep serving its own
organization's backlog while others wait with none (the proof's load runs: six of ten organizations waited
203-390 s for their first plan). Two rules give the slots round:

- Hand-over (`RunnerTurns.hand_over`): a runner that has done at least one job and asks for its next is told to
  exit (`HAND_OVER_HEADER` on the 204 of `POST /api/runner/jobs/next`) when every slot is held and another
  organization has waited at least `WAIT_S` with work queued and none running, in a lane at least as high as its
  own organization's best queued one (an apply ▸ a plan: the lanes' order holds across the hand-over). Its slot
  comes back at once (`RunnerSlots.reconcile`: a runner listed live and gone), and the dispatcher fills it.
- Turn order (`take_turns`): within a lane the dispatcher serves the organizations in rounds (each one's first
  phase, then each one's second, ...), and within a round the one whose runner was started longest ago first
  (`RunnerSlots.turns`), so the slot a runner hands over goes to an organization that waited, not back to it.

The open-runs index does not tell a plan from a speculative plan: both count as the plan lane here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from terrace.adapters.definitions import LANE_PRIORITY
from terrace.adapters.lanes import LaneDelivery
from terrace.domain import clock
from terrace.domain import runs as rs
from terrace.domain.jobs import HAND_OVER_HEADER
from terrace.services.runs.runner_slots import RunnerSlots
from terrace.services.runs.store import RunStore

__all__ = ["HAND_OVER_HEADER", "WAIT_S", "RunnerTurns", "take_turns", "yields"]

WAIT_S = 3.0  # an organization waiting less (a runner between two jobs, one just starting) is not starved
_RANK = {rs.APPLY_QUEUED: 0, rs.PLAN_QUEUED: 1}


def take_turns(deliveries: list[LaneDelivery], turns: Mapping[str, float] | None = None) -> list[LaneDelivery]:
    """One lane's waiting phases in dispatch order: organizations in rounds (each one's first, then each one's
    second, ...), within a round the organization whose last runner started longest ago (never: first) first,
    then the order they were sent in."""
    last = turns or {}
    rounds: dict[str, int] = Counter()
    ranked = []
    for position, delivery in enumerate(deliveries):
        organization = delivery.message.organization
        ranked.append(((rounds[organization], last.get(organization, 0.0), position), delivery))
        rounds[organization] += 1
    return [delivery for _, delivery in sorted(ranked, key=lambda r: r[0])]


def _age_s(stamp: str, now: float) -> float:
    if not stamp:
        return float("inf")
    try:
        return now - datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return float("inf")


class RunnerTurns:
    def __init__(self, store: RunStore, slots: RunnerSlots, max_runners: int) -> None:
        self._store, self._slots, self._max = store, slots, max_runners

    def hand_over(self, organization: str) -> bool:
        """Whether a runner of `organization` that just finished a job should exit so its slot goes to another
        organization (see the module's doc)."""
        if self._max <= 0 or self._slots.held() < self._max:
            return False  # room left: the dispatcher starts the others' runners anyway
        return yields(organization, self._store.open_runs())


def yields(organization: str, entries: list[dict[str, Any]]) -> bool:
    """Whether `organization`'s runner should give its slot up, given the open runs' index entries: another
    organization waited WAIT_S with none running, in a lane at least as high as `organization`'s best queued."""
    now = clock.epoch()
    lowest = len(LANE_PRIORITY)
    running: Counter[str] = Counter()
    own = lowest  # `organization`'s highest queued lane (0: apply; none: below every lane)
    starved: dict[str, int] = {}  # organization -> the highest lane it waited in for WAIT_S
    for entry in entries:
        if entry.get("agent_pool_id"):
            continue  # an agent pool's run: its agents', not the runners'
        org, status = entry["organization"], entry["status"]
        if status in rs.RUNNING:
            running[org] += 1
        elif status in _RANK and org == organization:
            own = min(own, _RANK[status])
        elif status in _RANK and _age_s(str(entry.get("queued_at") or ""), now) >= WAIT_S:
            starved[org] = min(starved.get(org, lowest), _RANK[status])
    return any(rank <= own for org, rank in starved.items() if running[org] == 0)
