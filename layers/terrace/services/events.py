"""Consumer of the events queue (run transitions, landed uploads): `EventService` hands each event to the handlers
subscribed to its type (the composition root subscribes them, `wiring/`).

Besides Terrace's own events (`{"type": ...}`), the queue carries the blob bucket's S3 event notifications
(`{"Records": [...]}`, `infra/stack.py`; the moto twin's bucket is configured alike by `wiring/local_resources.py`):
each created object becomes a `blob.landed` event (`landed_event`), the event the embedded blob server hands
over directly after a PUT (`web/blob_urls.py`). S3's `s3:TestEvent` and other records are ignored.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote_plus

log = logging.getLogger("terrace.events")

Handler = Callable[[dict[str, Any]], None]

BLOB_LANDED = "blob.landed"


def landed_event(key: str) -> dict[str, Any]:
    """An object was written to the blob store under `key` (an upload URL's PUT landed)."""
    return {"type": BLOB_LANDED, "key": key}


def s3_landed_events(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The `blob.landed` events of an S3 event notification (object keys arrive URL-encoded)."""
    records = message.get("Records")
    found = []
    for record in records if isinstance(records, list) else []:
        if not isinstance(record, dict) or record.get("eventSource") != "aws:s3":
            continue
        if not str(record.get("eventName", "")).startswith("ObjectCreated:"):
            continue
        key = ((record.get("s3") or {}).get("object") or {}).get("key")
        if isinstance(key, str) and key:
            found.append(landed_event(unquote_plus(key)))
    return found


class EventService:
    def __init__(self) -> None:
        self._handlers: dict[str, list[Handler]] = {}

    def subscribe(self, event_type: str, handler: Handler) -> None:
        self._handlers.setdefault(event_type, []).append(handler)

    def handle(self, message: dict[str, Any]) -> None:
        if "type" not in message and "Records" in message:
            for event in s3_landed_events(message):
                self.handle(event)
            return
        event_type = str(message.get("type", ""))
        log.info("event %s %s", event_type, {k: v for k, v in message.items() if k != "type"})
        for handler in self._handlers.get(event_type, []):
            handler(message)
