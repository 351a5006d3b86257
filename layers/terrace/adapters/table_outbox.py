"""The outbox (`outbox.Outbox`) as items in the table, one implementation on the memory, SQLite and DynamoDB tables.

Entries live under one partition, `outbox`, sorted by the time they were staged and a random id, so the relay's
recovery reads the oldest first with one query. The event is kept as JSON text (no number or null becomes a
DynamoDB type it was not). An entry has no expiry: it stays until it was published.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Sequence
from typing import Any

from terrace.adapters.outbox import OutboxEntry
from terrace.adapters.table import Put, Table, WriteOp
from terrace.domain import clock

PARTITION = "outbox"


def _entry(item: dict[str, Any]) -> OutboxEntry:
    return OutboxEntry(item["pk"], item["sk"], json.loads(item["event"]), int(item["staged_ms"]))


class TableOutbox:
    def __init__(self, table: Table, now_ms: Callable[[], int] | None = None) -> None:
        self.table = table  # the relay's reads and deletes (the bench counts them apart from a transition's)
        self._now_ms = now_ms or (lambda: int(clock.epoch() * 1000))

    def stage(self, event: dict[str, Any]) -> tuple[OutboxEntry, WriteOp]:
        staged = self._now_ms()
        entry = OutboxEntry(PARTITION, f"{staged:015d}#{secrets.token_hex(8)}", dict(event), staged)
        body = json.dumps(entry.event, separators=(",", ":"), sort_keys=True)
        item = {"pk": entry.pk, "sk": entry.sk, "event": body, "staged_ms": staged}
        return entry, Put(item, if_absent=True)

    def pending(self, limit: int = 25, older_than_s: float = 0) -> list[OutboxEntry]:
        before = self._now_ms() - int(older_than_s * 1000)
        found = []
        for item in self.table.query(PARTITION, limit=limit):
            if int(item["staged_ms"]) > before:
                break  # oldest first: the rest are younger still
            found.append(_entry(item))
        return found

    def remove(self, entries: Sequence[OutboxEntry]) -> None:
        if entries:
            self.table.batch_delete([(entry.pk, entry.sk) for entry in entries])
