"""The lanes (`lanes.Lanes`) in the embedded server's SQLite file, with SQS's semantics: a received message is
hidden until deleted, released or its hiding ends; each receive hands out a new receipt (an older one no longer
deletes it); a message received past the maximum moves to its lane's dead letters at its next receive."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable

from terrace.adapters.definitions import LANE_MAX_RECEIVES, LANE_PRIORITY
from terrace.adapters.lanes import MAX_DELAY_S, LaneDelivery, LaneMessage, check_lane
from terrace.adapters.sqlite_table import SqliteDatabase

SCHEMA = """
CREATE TABLE IF NOT EXISTS lanes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    lane TEXT NOT NULL,
    body TEXT NOT NULL,
    visible_at REAL NOT NULL,
    receive_count INTEGER NOT NULL DEFAULT 0,
    receipt TEXT,
    dead INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS lanes_visible ON lanes (lane, dead, visible_at, id);
"""


class SqliteLanes:
    def __init__(
        self,
        database: SqliteDatabase,
        *,
        max_receives: int = LANE_MAX_RECEIVES,
        now: Callable[[], float] = time.time,
    ) -> None:
        self._db, self._max_receives, self._now = database, max_receives, now
        database.migrate(SCHEMA)

    def send(self, lane: str, message: LaneMessage, delay_s: int = 0) -> None:
        check_lane(lane, LANE_PRIORITY)
        visible_at = self._now() + min(max(0, delay_s), MAX_DELAY_S)
        with self._db.write() as conn:
            conn.execute(
                "INSERT INTO lanes (lane, body, visible_at) VALUES (?, ?, ?)",
                (lane, json.dumps(message.body()), visible_at),
            )

    def receive(self, lane: str, max_messages: int, hide_s: int, wait_s: int = 0) -> list[LaneDelivery]:
        del wait_s  # every answer here is complete and immediate
        check_lane(lane, LANE_PRIORITY)
        now, received = self._now(), list[LaneDelivery]()
        with self._db.write() as conn:
            rows = conn.execute(
                "SELECT id, body, receive_count FROM lanes WHERE lane = ? AND dead = 0 AND visible_at <= ?"
                " ORDER BY visible_at, id LIMIT ?",
                (lane, now, max_messages + 100),
            ).fetchall()
            for row_id, body, count in rows:
                if len(received) >= max_messages:
                    break
                if count >= self._max_receives:
                    conn.execute("UPDATE lanes SET dead = 1, receipt = NULL WHERE id = ?", (row_id,))
                    continue
                receipt = f"{row_id}:{uuid.uuid4().hex}"
                conn.execute(
                    "UPDATE lanes SET receive_count = ?, visible_at = ?, receipt = ? WHERE id = ?",
                    (count + 1, now + hide_s, receipt, row_id),
                )
                received.append(LaneDelivery(lane, LaneMessage.from_body(json.loads(body)), receipt, count + 1))
        return received

    def delete(self, delivery: LaneDelivery) -> None:
        with self._db.write() as conn:
            conn.execute("DELETE FROM lanes WHERE receipt = ? AND dead = 0", (delivery.receipt,))

    def release(self, delivery: LaneDelivery) -> None:
        with self._db.write() as conn:
            conn.execute(
                "UPDATE lanes SET visible_at = ? WHERE receipt = ? AND dead = 0", (self._now(), delivery.receipt)
            )

    def dead_letters(self, lane: str) -> list[LaneMessage]:
        with self._db.connection() as conn:
            rows = conn.execute("SELECT body FROM lanes WHERE lane = ? AND dead = 1 ORDER BY id", (lane,)).fetchall()
        return [LaneMessage.from_body(json.loads(body)) for (body,) in rows]
