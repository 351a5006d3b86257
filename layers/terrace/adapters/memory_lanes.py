"""The lanes (`lanes.Lanes`) in memory, with the same semantics as SQS and SQLite: unit tests."""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from terrace.adapters.definitions import LANE_MAX_RECEIVES, LANE_PRIORITY
from terrace.adapters.lanes import MAX_DELAY_S, LaneDelivery, LaneMessage, check_lane


@dataclass
class _Entry:
    message: LaneMessage
    visible_at: float
    order: int
    receive_count: int = 0
    receipt: str | None = None


class MemoryLanes:
    def __init__(self, *, max_receives: int = LANE_MAX_RECEIVES, now: Callable[[], float] = time.time) -> None:
        self._max_receives, self._now = max_receives, now
        self._entries: dict[str, list[_Entry]] = {lane: [] for lane in LANE_PRIORITY}
        self._dead: dict[str, list[LaneMessage]] = {lane: [] for lane in LANE_PRIORITY}
        self._order = itertools.count()
        self._lock = threading.Lock()

    def messages(self, lane: str) -> list[LaneMessage]:
        """Every message still on `lane` (tests)."""
        with self._lock:
            return [entry.message for entry in self._entries[lane]]

    def send(self, lane: str, message: LaneMessage, delay_s: int = 0) -> None:
        check_lane(lane, LANE_PRIORITY)
        visible_at = self._now() + min(max(0, delay_s), MAX_DELAY_S)
        with self._lock:
            self._entries[lane].append(_Entry(message, visible_at, next(self._order)))

    def receive(self, lane: str, max_messages: int, hide_s: int, wait_s: int = 0) -> list[LaneDelivery]:
        del wait_s  # every answer here is complete and immediate
        check_lane(lane, LANE_PRIORITY)
        now, received = self._now(), list[LaneDelivery]()
        with self._lock:
            for entry in sorted(self._entries[lane], key=lambda e: (e.visible_at, e.order)):
                if entry.visible_at > now or len(received) >= max_messages:
                    continue
                if entry.receive_count >= self._max_receives:
                    self._entries[lane].remove(entry)
                    self._dead[lane].append(entry.message)
                    continue
                entry.receive_count += 1
                entry.visible_at = now + hide_s
                entry.receipt = f"{entry.order}:{uuid.uuid4().hex}"
                received.append(LaneDelivery(lane, entry.message, entry.receipt, entry.receive_count))
        return received

    def delete(self, delivery: LaneDelivery) -> None:
        with self._lock:
            self._entries[delivery.lane] = [e for e in self._entries[delivery.lane] if e.receipt != delivery.receipt]

    def release(self, delivery: LaneDelivery) -> None:
        with self._lock:
            for entry in self._entries[delivery.lane]:
                if entry.receipt == delivery.receipt:
                    entry.visible_at = self._now()

    def dead_letters(self, lane: str) -> list[LaneMessage]:
        with self._lock:
            return list(self._dead[lane])
