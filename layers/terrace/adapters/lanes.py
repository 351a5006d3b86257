"""The lanes port: run phases that became runnable, on one queue per priority (apply ▸ plan ▸ speculative,
`definitions.LANE_PRIORITY`), with SQS's semantics and a dead-letter queue each. The dispatcher
(`services/runs/scaler.py`) drains them in order and makes sure a runner of each phase's organization will take it;
runners never read them (they claim their organization's jobs through the runner API).

A message only says "this job of this organization may need a runner": the run in the table is the truth, so a
duplicate, a stale message (its job claimed or gone) or a lost one (the reaper sends a queued phase again) is
harmless. Implementations: `sqs_lanes.py` (SQS, or moto), `sqlite_lanes.py` (the embedded server),
`memory_lanes.py` (unit tests); `tests/contract/test_lanes_contract.py` is the contract.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Protocol

MAX_DELAY_S = 900  # SQS's longest delivery delay; a longer back-off is the job queue's, the message comes earlier


@dataclass(frozen=True)
class LaneMessage:
    organization: str
    job_id: str
    run_id: str
    phase: str
    attempt: int = 1

    def body(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_body(cls, body: dict[str, Any]) -> LaneMessage:
        return cls(
            organization=str(body["organization"]),
            job_id=str(body["job_id"]),
            run_id=str(body["run_id"]),
            phase=str(body["phase"]),
            attempt=int(body.get("attempt", 1)),
        )


@dataclass(frozen=True)
class LaneDelivery:
    lane: str
    message: LaneMessage
    receipt: str  # deletes or releases this delivery only
    receive_count: int


class Lanes(Protocol):
    def send(self, lane: str, message: LaneMessage, delay_s: int = 0) -> None:
        """Queue `message` on `lane`, visible after `delay_s` (at most MAX_DELAY_S)."""
        ...

    def receive(self, lane: str, max_messages: int, hide_s: int, wait_s: int = 0) -> list[LaneDelivery]:
        """Up to `max_messages` visible messages of `lane`, each hidden for `hide_s` unless deleted or released; a
        message received past its lane's maximum moves to the lane's dead letters instead. `wait_s` 0: a quick
        answer that may miss visible messages (SQS's short poll samples some of its servers, and may answer
        empty); `wait_s` > 0: a complete answer (SQS's long poll asks every server), which waits up to `wait_s`
        for a first message when none is visible. The SQLite and memory lanes always answer completely, at once."""
        ...

    def delete(self, delivery: LaneDelivery) -> None: ...

    def release(self, delivery: LaneDelivery) -> None:
        """Make the message visible again at once (the next tick sees it)."""
        ...

    def dead_letters(self, lane: str) -> list[LaneMessage]: ...


def check_lane(lane: str, lanes: tuple[str, ...]) -> None:
    if lane not in lanes:
        raise ValueError(f"unknown lane {lane!r}")
