"""The outbox port: events written in the same table transaction as the change they tell of, published afterwards.

A service that changes state and then tells of it (a run transition's `run.status_changed`) stages each event with
`stage`: it gets the write to add to its own transaction, so the event exists exactly when the change committed.
A relay (`services/outbox_relay.py`) publishes what is staged to the events port and then removes it: right after
the commit (the fast path) and on the reaper's schedule for what a kill left behind (`pending`: the entries older
than a grace, oldest first). An event is thus published at least once; consumers are idempotent.
Implementation: `table_outbox.py` (memory, SQLite and DynamoDB tables alike);
`tests/contract/test_outbox_contract.py` is the contract.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from terrace.adapters.table import WriteOp


@dataclass(frozen=True)
class OutboxEntry:
    pk: str
    sk: str
    event: dict[str, Any]
    staged_ms: int  # when it was staged (epoch milliseconds)


class Outbox(Protocol):
    def stage(self, event: dict[str, Any]) -> tuple[OutboxEntry, WriteOp]:
        """The entry of `event` and the write that stores it, to ride in the caller's transaction."""
        ...

    def pending(self, limit: int = 25, older_than_s: float = 0) -> list[OutboxEntry]:
        """Up to `limit` entries staged at least `older_than_s` ago, oldest first (one table query)."""
        ...

    def remove(self, entries: Sequence[OutboxEntry]) -> None:
        """Forget published entries (one batch; a missing one is fine)."""
        ...
