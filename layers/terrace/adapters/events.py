"""The events port: what services publish (run status changes, uploaded blobs, ...) and what the events worker
consumes, with SQS's semantics. Implementations: `sqs_events.py` (SQS, or moto), `sqlite_events.py` (the
embedded server), `memory_events.py` (unit tests); `tests/contract/test_event_queue_contract.py` is the contract.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

DEFAULT_VISIBILITY_S = 60  # the SQLite and memory queues' defaults (SQS's: the queue's, `definitions.py`)
DEFAULT_MAX_RECEIVES = 5


class EventPublisher(Protocol):
    def publish(self, event: dict[str, Any]) -> None: ...


@dataclass(frozen=True)
class ReceivedEvent:
    body: dict[str, Any]
    receipt: str  # acknowledges this delivery only
    receive_count: int  # deliveries so far, this one included


class EventQueue(EventPublisher, Protocol):
    """The events queue seen by its consumer (SQS semantics): a received event is invisible for `visibility_s`,
    then delivered again unless acknowledged; past `max_receives` deliveries it moves to the dead letters."""

    def publish(self, event: dict[str, Any], delay_s: int = 0) -> None: ...

    def receive(
        self, max_events: int = 10, wait_s: float = 0, visibility_s: int | None = None
    ) -> list[ReceivedEvent]: ...

    def ack(self, receipt: str) -> None: ...

    def dead_letters(self) -> list[dict[str, Any]]: ...
