"""Consumer of the events queue (run transitions). Notifications and run triggers attach here."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger("terrace.events")

Handler = Callable[[dict[str, Any]], None]


class EventService:
    def __init__(self) -> None:
        self._handlers: dict[str, list[Handler]] = {}

    def subscribe(self, event_type: str, handler: Handler) -> None:
        self._handlers.setdefault(event_type, []).append(handler)

    def handle(self, message: dict[str, Any]) -> None:
        event_type = str(message.get("type", ""))
        log.info("event %s %s", event_type, {k: v for k, v in message.items() if k != "type"})
        for handler in self._handlers.get(event_type, []):
            handler(message)
