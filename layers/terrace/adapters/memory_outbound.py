"""The outbound port in memory (unit tests): the destination checks of `httpx_outbound.py` over a given resolver, then
each request is recorded and answered by `answer` (default 200)."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from terrace.adapters.httpx_outbound import Resolver, checked_address
from terrace.adapters.outbound import OutboundResponse
from terrace.domain.destinations import Allowance, IPAddress


@dataclass(frozen=True)
class SentRequest:
    url: str
    body: bytes
    headers: dict[str, str]


def _public_resolver(host: str, port: int) -> list[IPAddress]:
    """Every name resolves to a public address (never contacted), `localhost` to loopback."""
    return [ipaddress.ip_address("127.0.0.1" if host == "localhost" else "93.184.215.14")]


@dataclass
class MemoryOutbound:
    allowance: Allowance = field(default_factory=Allowance)
    resolver: Resolver = _public_resolver
    answer: Callable[[str, bytes], OutboundResponse] = lambda url, body: OutboundResponse(200, "")
    sent: list[SentRequest] = field(default_factory=list)

    def post(self, url: str, body: bytes, headers: Mapping[str, str], timeout_s: float) -> OutboundResponse:
        checked = checked_address(url, self.allowance, self.resolver)
        if isinstance(checked, OutboundResponse):
            return checked
        self.sent.append(SentRequest(url, body, dict(headers)))
        return self.answer(url, body)
