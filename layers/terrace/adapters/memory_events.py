"""In-memory twins of the events port (`events.py`): `MemoryEventQueue`, with the same semantics as SQS and SQLite,
and `MemoryEventPublisher`, which only records what was published."""

from __future__ import annotations

import copy
import itertools
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from terrace.adapters.events import DEFAULT_MAX_RECEIVES, DEFAULT_VISIBILITY_S, ReceivedEvent


@dataclass
class _Entry:
    body: dict[str, Any]
    visible_at: float
    receive_count: int = 0
    receipt: str | None = None
    order: int = field(default=0)


class MemoryEventQueue:
    def __init__(
        self,
        *,
        visibility_s: int = DEFAULT_VISIBILITY_S,
        max_receives: int = DEFAULT_MAX_RECEIVES,
        now: Callable[[], float] = time.time,
    ) -> None:
        self._visibility_s, self._max_receives, self._now = visibility_s, max_receives, now
        self._entries: list[_Entry] = []
        self._dead: list[dict[str, Any]] = []
        self._order = itertools.count()
        self._changed = threading.Condition()

    @property
    def events(self) -> list[dict[str, Any]]:
        """Every event still queued (as MemoryEventPublisher.events lists what was published)."""
        with self._changed:
            return [copy.deepcopy(e.body) for e in self._entries]

    def publish(self, event: dict[str, Any], delay_s: int = 0) -> None:
        with self._changed:
            self._entries.append(_Entry(copy.deepcopy(event), self._now() + delay_s, order=next(self._order)))
            self._changed.notify_all()

    def receive(self, max_events: int = 10, wait_s: float = 0, visibility_s: int | None = None) -> list[ReceivedEvent]:
        deadline = time.monotonic() + wait_s
        visibility = self._visibility_s if visibility_s is None else visibility_s
        with self._changed:
            while True:
                received = self._receive_now(max_events, visibility)
                left = deadline - time.monotonic()
                if received or left <= 0:
                    return received
                self._changed.wait(min(left, 1.0))

    def _receive_now(self, max_events: int, visibility_s: int) -> list[ReceivedEvent]:
        now, received = self._now(), list[ReceivedEvent]()
        for entry in sorted(self._entries, key=lambda e: (e.visible_at, e.order)):
            if entry.visible_at > now or len(received) >= max_events:
                continue
            if entry.receive_count >= self._max_receives:
                self._entries.remove(entry)
                self._dead.append(entry.body)
                continue
            entry.receive_count += 1
            entry.visible_at = now + visibility_s
            entry.receipt = f"{entry.order}:{uuid.uuid4().hex}"
            received.append(ReceivedEvent(copy.deepcopy(entry.body), entry.receipt, entry.receive_count))
        return received

    def ack(self, receipt: str) -> None:
        with self._changed:
            self._entries = [e for e in self._entries if e.receipt != receipt]

    def dead_letters(self) -> list[dict[str, Any]]:
        with self._changed:
            return copy.deepcopy(self._dead)


class MemoryEventPublisher:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def publish(self, event: dict[str, Any]) -> None:
        self.events.append(dict(event))
