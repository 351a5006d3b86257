"""How the dispatcher (`scaler.py`) reads the lanes without missing a queued phase.

A tick first reads every lane with quick receives. SQS's short poll asks a sample of its servers and may answer
empty while messages wait, so an empty answer proves nothing: when the table holds a queued phase whose message
the quick receives did not return, the lanes that may hold it are read again completely (a long poll, which asks
every server and waits up to `LONG_POLL_S` for a message sent meanwhile), and the open runs are read again after
it (a message names a run written before it was sent)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from terrace.adapters.definitions import LANE_PRIORITY, LANE_VISIBILITY_S
from terrace.adapters.lanes import LaneDelivery, Lanes
from terrace.domain import runs as rs

DRAIN_MAX = 1000  # messages read from one lane per tick
LONG_POLL_S = 2  # a complete receive's wait (SQS's long poll), only when the quick one missed a queued phase


def receive(lanes: Lanes, names: Iterable[str] = LANE_PRIORITY, wait_s: int = 0) -> list[LaneDelivery]:
    """The lanes' waiting messages, hidden from other ticks until released, in LANE_PRIORITY order."""
    return [
        delivery
        for lane in names
        for delivery in lanes.receive(lane, DRAIN_MAX, hide_s=LANE_VISIBILITY_S, wait_s=wait_s)
    ]


def missed_lanes(received: list[LaneDelivery], entries: list[dict[str, Any]]) -> list[str]:
    """The lanes that may hold a phase queued in the table whose message `received` lacks."""
    seen = {delivery.message.run_id for delivery in received}
    missed = {entry["status"] for entry in entries if entry["status"] in rs.QUEUED and entry["run_id"] not in seen}
    wanted = {"apply"} if rs.APPLY_QUEUED in missed else set()
    wanted |= {"plan", "speculative"} if rs.PLAN_QUEUED in missed else set()
    return [lane for lane in LANE_PRIORITY if lane in wanted]


def read_lanes(
    lanes: Lanes, open_runs: Callable[[], list[dict[str, Any]]]
) -> tuple[list[LaneDelivery], list[dict[str, Any]]]:
    """The lanes' waiting messages and the open runs read after them; the caller releases what it does not delete
    (here, when reading fails)."""
    received = receive(lanes)  # before the open runs: each message names a run written before it was sent
    try:
        entries = open_runs()
        if missed := missed_lanes(received, entries):
            received += receive(lanes, missed, wait_s=LONG_POLL_S)
            entries = open_runs()
    except Exception:
        for delivery in received:
            lanes.release(delivery)
        raise
    return received, entries
