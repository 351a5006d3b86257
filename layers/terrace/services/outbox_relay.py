"""The outbox relay: publishes staged events (`adapters/outbox.py`) to the events port and removes them once
published. Below every area, like `events.py`.

`deliver` is the fast path, called by whoever staged the entries right after its transaction committed: each event
is published, then the published entries go in one batch. What a kill (or a failed publish) left staged is found
by `sweep_if_due`, a reaper sweep run each tick: entries older than `grace_s` (so it does not race a committer's
own fast path), oldest first, one query and one batch per tick. An event may thus be published twice (a kill
between its publish and its removal, or a fast path slower than the grace): consumers are idempotent.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from terrace.adapters.events import EventPublisher
from terrace.adapters.outbox import Outbox, OutboxEntry

log = logging.getLogger("terrace.outbox")
GRACE_S = 5.0  # a committer publishes its own entries within this (milliseconds); older ones were left behind
SWEEP_BATCH = 25


class OutboxRelay:
    def __init__(self, outbox: Outbox, publisher: EventPublisher, grace_s: float = GRACE_S) -> None:
        self.outbox, self._publisher, self._grace_s = outbox, publisher, grace_s

    def deliver(self, entries: Sequence[OutboxEntry]) -> int:
        """Publish `entries` in order and remove the published ones; stops at the first failed publish (the rest
        stay staged for the sweep). Returns how many were published."""
        published: list[OutboxEntry] = []
        for entry in entries:
            try:
                self._publisher.publish(entry.event)
            except Exception:
                log.exception("could not publish %s; the outbox keeps it", entry.event.get("type"))
                break
            published.append(entry)
        try:
            self.outbox.remove(published)
        except Exception:  # published already: the sweep publishes them again, which consumers tolerate
            log.exception("could not remove %d published outbox entries", len(published))
        return len(published)

    def sweep_if_due(self) -> dict[str, int] | None:
        """The reaper's sweep: relay what was left staged (None when nothing was)."""
        left = self.outbox.pending(SWEEP_BATCH, older_than_s=self._grace_s)
        if not left:
            return None
        return {"relayed": self.deliver(left), "found": len(left)}
