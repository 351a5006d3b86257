"""The outbound port over httpx: the destination is resolved, every address it resolves to is checked
(`domain/destinations.py`), and the request goes to the first checked address with the original `Host` header and
TLS server name (certificates are verified against the name), so DNS cannot swap in an inward address after the
check. Redirects are not followed (a 3xx is the receiver's answer). The answer is read as it streams, at most
`ANSWER_READ_MAX` bytes as sent (no compression asked for, none undone) within the request's timeout, then the
connection is dropped: a receiver a tenant named (a
notification's URL, a run task's, a forge's token endpoint) cannot make the server hold an endless body."""

from __future__ import annotations

import ipaddress
import socket
import ssl
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from urllib.parse import urlsplit, urlunsplit

from terrace.adapters.outbound import BODY_KEPT, OutboundResponse, kept_headers
from terrace.domain.destinations import Allowance, IPAddress, address_class, blocked_address, check_url
from terrace.domain.errors import Invalid

Resolver = Callable[[str, int], Sequence[IPAddress]]
ANSWER_READ_MAX = 4 * BODY_KEPT  # bytes: BODY_KEPT characters of UTF-8 at most


def system_resolver(host: str, port: int) -> list[IPAddress]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: list[IPAddress] = []
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        if address not in seen:
            seen.append(address)
    return seen


def checked_address(url: str, allowance: Allowance, resolver: Resolver) -> tuple[str, IPAddress] | OutboundResponse:
    """The destination's host and the address to connect to, or the refusal as a response."""
    try:
        destination = check_url(url, "url", allowance)
    except Invalid as exc:
        return OutboundResponse(None, error=f"blocked: {exc.detail}")
    try:
        addresses = list(resolver(destination.host, destination.port))
    except (OSError, UnicodeError) as exc:
        return OutboundResponse(None, error=f"connection: cannot resolve {destination.host}: {exc}")
    if not addresses:
        return OutboundResponse(None, error=f"connection: {destination.host} has no address")
    for address in addresses:
        if blocked_address(address, destination.host, allowance):
            return OutboundResponse(
                None, error=f"blocked: {destination.host} resolves to a {address_class(address)} address"
            )
    return destination.host, addresses[0]


class HttpxOutbound:
    def __init__(
        self, allowance: Allowance, resolver: Resolver = system_resolver, verify: ssl.SSLContext | bool = True
    ) -> None:
        self._allowance = allowance
        self._resolver = resolver
        self._verify = verify  # public roots; tests give their own CA

    def post(self, url: str, body: bytes, headers: Mapping[str, str], timeout_s: float) -> OutboundResponse:
        checked = checked_address(url, self._allowance, self._resolver)
        if isinstance(checked, OutboundResponse):
            return checked
        host, address = checked
        parts = urlsplit(url)
        literal = f"[{address}]" if address.version == 6 else str(address)
        netloc = f"{literal}:{parts.port}" if parts.port else literal
        pinned = urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))
        named = f"[{host}]" if ":" in host else host  # an IPv6 literal keeps its brackets in Host
        host_header = f"{named}:{parts.port}" if parts.port else named
        import httpx  # on the first delivery, not on the API Lambda's cold start

        try:
            with httpx.Client(
                follow_redirects=False, timeout=timeout_s, trust_env=False, verify=self._verify
            ) as client:
                sent = {"Accept-Encoding": "identity", **headers, "Host": host_header}
                request = client.build_request(
                    "POST", pinned, content=body, headers=sent, extensions={"sni_hostname": host}
                )
                deadline = time.monotonic() + timeout_s
                answer = client.send(request, stream=True)
                try:
                    kept = _bounded(answer.iter_raw(), deadline)  # as sent: no decompression to inflate
                finally:
                    answer.close()
                text = kept.decode(answer.encoding or "utf-8", errors="replace")
                return OutboundResponse(
                    answer.status_code, text[:BODY_KEPT], headers=kept_headers(list(answer.headers.items()))
                )
        except httpx.TimeoutException:
            return OutboundResponse(None, error="timeout")
        except httpx.HTTPError as exc:
            return OutboundResponse(None, error=f"connection: {exc.__class__.__name__}: {exc}"[:BODY_KEPT])
        except (httpx.InvalidURL, ValueError) as exc:  # a URL or header httpx cannot send: that delivery fails
            return OutboundResponse(None, error=f"invalid request: {exc.__class__.__name__}: {exc}"[:BODY_KEPT])


def _bounded(chunks: Iterator[bytes], deadline: float) -> bytes:
    """The answer's first ANSWER_READ_MAX bytes, or what came before the deadline; the rest is never read."""
    kept = bytearray()
    for chunk in chunks:
        kept += chunk[: ANSWER_READ_MAX - len(kept)]
        if len(kept) >= ANSWER_READ_MAX or time.monotonic() > deadline:
            break
    return bytes(kept)
