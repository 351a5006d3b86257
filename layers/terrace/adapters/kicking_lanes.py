"""Lanes (`lanes.Lanes`) that wake the dispatcher after every message sent: an enqueue, a retry (a job a runner
handed back, or lost), the reaper's resend of a queued phase. On AWS the wake-up is an async invoke of the scaler
Lambda, so a runner starts within seconds instead of at the scaler's next scheduled tick. Inside `coalesced()` (the
reaper's pass, which may resend many queued phases) the sends wake it once, after the last: one tick reads them all."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from terrace.adapters.lanes import LaneDelivery, LaneMessage, Lanes

log = logging.getLogger("terrace.queues")
_held: ContextVar[list[bool] | None] = ContextVar("terrace_lane_kicks_held", default=None)


class KickingLanes:
    def __init__(self, inner: Lanes, kick: Callable[[], None]) -> None:
        self._inner = inner
        self._kick = kick

    def send(self, lane: str, message: LaneMessage, delay_s: int = 0) -> None:
        """A delayed message wakes the dispatcher too: its tick reads the lanes completely (a long poll waits for a
        message that becomes visible meanwhile); later, the reaper's resend wakes it again."""
        self._inner.send(lane, message, delay_s)
        held = _held.get()
        if held is not None:
            held.append(True)  # woken once, when the coalesced sends end
            return
        self._wake()

    def _wake(self) -> None:
        try:
            self._kick()
        except Exception:  # the scheduled tick, or the reaper's resend, still starts a runner
            log.exception("could not wake the scaler")

    @contextmanager
    def coalesced(self) -> Iterator[None]:
        """The sends within wake the dispatcher once, at the end (none if nothing was sent)."""
        held: list[bool] = []
        token = _held.set(held)
        try:
            yield
        finally:
            _held.reset(token)
            if held:
                self._wake()

    def receive(self, lane: str, max_messages: int, hide_s: int, wait_s: int = 0) -> list[LaneDelivery]:
        return self._inner.receive(lane, max_messages, hide_s, wait_s)

    def delete(self, delivery: LaneDelivery) -> None:
        self._inner.delete(delivery)

    def release(self, delivery: LaneDelivery) -> None:
        self._inner.release(delivery)

    def dead_letters(self, lane: str) -> list[LaneMessage]:
        return self._inner.dead_letters(lane)
