"""The events queue in the embedded server's SQLite file, with SQS's semantics (`events.EventQueue`).

An event becomes visible at `visible_at` (delayed delivery); a receive makes it invisible for the visibility
timeout, counts the delivery and hands out a new receipt (an older receipt no longer acknowledges it); an
event received `max_receives` times and still not acknowledged moves to the dead letters at its next receive.
The embedded server is the queue's only consumer: at its start, what its previous process had received and not
acknowledged (it died handling them) is visible again at once (`release_received`), not after the visibility
timeout.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from terrace.adapters.events import DEFAULT_MAX_RECEIVES, DEFAULT_VISIBILITY_S, ReceivedEvent
from terrace.adapters.sqlite_table import SqliteDatabase

SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    body TEXT NOT NULL,
    visible_at REAL NOT NULL,
    receive_count INTEGER NOT NULL DEFAULT 0,
    receipt TEXT,
    dead INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS events_visible ON events (dead, visible_at, id);
"""
POLL_S = 0.1


class SqliteEventQueue:
    def __init__(
        self,
        database: SqliteDatabase,
        *,
        visibility_s: int = DEFAULT_VISIBILITY_S,
        max_receives: int = DEFAULT_MAX_RECEIVES,
        now: Callable[[], float] = time.time,
    ) -> None:
        self._db = database
        self._visibility_s = visibility_s
        self._max_receives = max_receives
        self._now = now
        self._published = threading.Condition()  # wakes a waiting receive in this process
        database.migrate(SCHEMA)

    def publish(self, event: dict[str, Any], delay_s: int = 0) -> None:
        with self._db.write() as conn:
            conn.execute(
                "INSERT INTO events (body, visible_at) VALUES (?, ?)", (json.dumps(event), self._now() + delay_s)
            )
        with self._published:
            self._published.notify_all()

    def receive(self, max_events: int = 10, wait_s: float = 0, visibility_s: int | None = None) -> list[ReceivedEvent]:
        deadline = time.monotonic() + wait_s
        while True:
            received = self._receive_now(max_events, self._visibility_s if visibility_s is None else visibility_s)
            left = deadline - time.monotonic()
            if received or left <= 0:
                return received
            with self._published:
                self._published.wait(min(left, POLL_S * 10))

    def _receive_now(self, max_events: int, visibility_s: int) -> list[ReceivedEvent]:
        now = self._now()
        received: list[ReceivedEvent] = []
        with self._db.write() as conn:
            rows = conn.execute(
                "SELECT id, body, receive_count FROM events WHERE dead = 0 AND visible_at <= ?"
                " ORDER BY visible_at, id LIMIT ?",
                (now, max_events + 100),
            )
            for event_id, body, count in rows.fetchall():
                if count >= self._max_receives:
                    conn.execute("UPDATE events SET dead = 1, receipt = NULL WHERE id = ?", (event_id,))
                    continue
                receipt = f"{event_id}:{uuid.uuid4().hex}"
                conn.execute(
                    "UPDATE events SET receive_count = ?, visible_at = ?, receipt = ? WHERE id = ?",
                    (count + 1, now + visibility_s, receipt, event_id),
                )
                received.append(ReceivedEvent(json.loads(body), receipt, count + 1))
                if len(received) >= max_events:
                    break
        return received

    def release_received(self) -> int:
        """Make every received, unacknowledged event visible now (its consumer is gone); returns how many.
        Delayed events (never received) keep their time."""
        with self._db.write() as conn:
            cursor = conn.execute(
                "UPDATE events SET visible_at = ?, receipt = NULL WHERE receipt IS NOT NULL AND dead = 0",
                (self._now(),),
            )
            return int(cursor.rowcount)

    def ack(self, receipt: str) -> None:
        with self._db.write() as conn:
            conn.execute("DELETE FROM events WHERE receipt = ? AND dead = 0", (receipt,))

    def dead_letters(self) -> list[dict[str, Any]]:
        with self._db.connection() as conn:
            rows = conn.execute("SELECT body FROM events WHERE dead = 1 ORDER BY id").fetchall()
        return [json.loads(body) for (body,) in rows]
