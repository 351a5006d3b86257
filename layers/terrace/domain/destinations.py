"""Where the server may send a request a user configured (notification URLs, run task URLs): the rules, pure.

A destination is an absolute `http`/`https` URL without credentials. Its host must resolve only to public
addresses: loopback, private (RFC 1918, unique-local), link-local (169.254.169.254, the instance metadata service,
above all), shared, multicast, reserved and unspecified addresses are refused — unless the deployment allows them
(`Settings.outbound_allow`: host names, addresses and networks, e.g. `127.0.0.0/8,::1,hooks.internal`). `make dev`
allows loopback, so a receiver on the developer's machine works. The address check runs twice: when the URL is
saved (`check_url`, a 422 naming the field) and on every delivery against the addresses the name resolves to then
(`blocked_address`), which the sender connects to (`adapters/httpx_outbound.py`), so a name that later resolves
inward is refused too. A non-ASCII host is checked, kept and sent as its IDNA (ASCII) form, so `127。0。0。1`
(full-width dots) is the loopback address it resolves to.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from terrace.domain.errors import Invalid

URL_MAX = 2048
SCHEMES = ("http", "https")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class Allowance:
    """The deployment's exceptions to the public-address rule."""

    hosts: frozenset[str] = frozenset()
    networks: tuple[IPNetwork, ...] = ()

    @classmethod
    def parse(cls, entries: Iterable[str]) -> Allowance:
        hosts, networks = set(), []
        for raw in entries:
            entry = raw.strip().lower()
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                hosts.add(entry.rstrip("."))
        return cls(frozenset(hosts), tuple(networks))

    def allows_host(self, host: str) -> bool:
        return host.lower().rstrip(".") in self.hosts

    def allows_address(self, address: IPAddress) -> bool:
        return any(address.version == net.version and address in net for net in self.networks)


LOOPBACK_ONLY = Allowance.parse(["127.0.0.0/8", "::1", "localhost"])


@dataclass(frozen=True)
class Destination:
    url: str
    scheme: str
    host: str  # lower-case, without brackets
    port: int


def _pointer(field: str) -> str:
    return f"/data/attributes/{field}"


def check_url(url: object, field: str, allowance: Allowance) -> Destination:
    """`url` as a destination, or a 422 naming `field`: the shape, and a literal address's class (a name is checked
    when it is resolved, at each delivery)."""
    if not isinstance(url, str) or not url:
        raise Invalid(f"{field} must be an http or https URL", pointer=_pointer(field))
    if len(url) > URL_MAX:
        raise Invalid(f"{field} is longer than {URL_MAX} characters", pointer=_pointer(field))
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise Invalid(f"{field} is not a valid URL: {exc}", pointer=_pointer(field)) from None
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise Invalid(f"{field} must be an http or https URL", pointer=_pointer(field))
    host = (parts.hostname or "").lower()
    if not host or any(c.isspace() for c in url):
        raise Invalid(f"{field} must name a host", pointer=_pointer(field))
    if parts.username is not None or parts.password is not None:
        raise Invalid(f"{field} must not carry credentials", pointer=_pointer(field))
    if not host.isascii():  # checked and sent as its IDNA form: `127。0。0。1` is 127.0.0.1
        host = _idna(host, field)
        url = urlunsplit(
            (parts.scheme, host if port is None else f"{host}:{port}", parts.path, parts.query, parts.fragment)
        )
    destination = Destination(url, scheme, host, port or (443 if scheme == "https" else 80))
    literal = _literal_address(host)
    if literal is not None and blocked_address(literal, host, allowance):
        raise Invalid(
            f"{field} points at a {address_class(literal)} address, which this server does not send to",
            pointer=_pointer(field),
        )
    named_loopback = host.rstrip(".") == "localhost" or host.rstrip(".").endswith(".localhost")
    if literal is None and named_loopback and not allowance.allows_host(host):
        raise Invalid(
            f"{field} points at a loopback address, which this server does not send to", pointer=_pointer(field)
        )
    return destination


def _idna(host: str, field: str) -> str:
    """A non-ASCII host name's ASCII form (IDNA, as the resolver encodes it: full-width dots and digits mapped),
    or a 422."""
    try:
        ascii_host = host.encode("idna").decode("ascii").lower()
    except UnicodeError:
        raise Invalid(f"{field} names a host that is not a valid domain name", pointer=_pointer(field)) from None
    if not ascii_host or ":" in ascii_host:
        raise Invalid(f"{field} names a host that is not a valid domain name", pointer=_pointer(field))
    return ascii_host


def _literal_address(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def address_class(address: IPAddress) -> str:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address_class(address.ipv4_mapped)
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link-local"
    if address.is_private or (isinstance(address, ipaddress.IPv4Address) and address in _SHARED):
        return "private"
    if address.is_multicast:
        return "multicast"
    if address.is_unspecified or address.is_reserved or not address.is_global:
        return "reserved"
    return "public"


_SHARED = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT: not global, not "private" to Python


def blocked_address(address: IPAddress, host: str, allowance: Allowance) -> bool:
    """Whether the server must not connect to `address` (which `host` resolved to)."""
    if address_class(address) == "public":
        return False
    mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
    return not (
        allowance.allows_host(host)
        or allowance.allows_address(address)
        or (mapped is not None and allowance.allows_address(mapped))
    )
