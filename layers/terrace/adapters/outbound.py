"""The outbound port: POST a body to a URL a user configured (notifications, run tasks), under the destination rules
of `domain/destinations.py`. Implementations: `httpx_outbound.py` (resolves the name, refuses it when any address it
resolves to is blocked, connects to the checked address: a name cannot turn inward between check and connection;
never follows redirects) and `memory_outbound.py` (records, for unit tests; the same checks over a given resolver).
`tests/contract/test_outbound_contract.py` is the contract.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

BODY_KEPT = 2048  # characters of a receiver's answer kept with a delivery


@dataclass(frozen=True)
class OutboundResponse:
    status: int | None  # the receiver's HTTP status; None when there was no answer
    body: str = ""  # its first BODY_KEPT characters
    error: str | None = None  # why there was no answer: "blocked: ...", "timeout", "connection: ..."

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


class Outbound(Protocol):
    def post(self, url: str, body: bytes, headers: Mapping[str, str], timeout_s: float) -> OutboundResponse: ...
