"""The deployment's own addresses, as HCP Terraform publishes its own at `GET /api/meta/ip-ranges`: `api` (where
clients reach the API: what a firewall in front of them opens), `notifications` (where notification deliveries and
run task requests come from), `sentinel` (where policy evaluations' outbound requests come from: HCP's name for its
policy engine; Terrace's OPA engine makes none, `http.send` is undefined in it, so this is what the operator
publishes for the server's egress) and `vcs` (where forge calls come from), each a list of CIDRs.

A self-hosted deployment has no published ranges: each list is what its operator configured
(`TERRACE_IP_RANGES_API`, `..._NOTIFICATIONS`, `..._SENTINEL`, `..._VCS`), checked as CIDRs at start, empty when
unset. Terrace never guesses an address. The lists are as old as the process that read them (a changed setting is a
new deployment, so a new process), which is what `Last-Modified` and `If-Modified-Since` compare."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import format_datetime, parsedate_to_datetime

MAX_RANGES = 1000  # per list: a setting, not a database


def cidrs(values: Iterable[object]) -> tuple[str, ...]:
    """The CIDRs of a setting, normalized (`10.0.0.0/8`; an address alone is its /32 or /128); a value that is no
    network, or a network with host bits set, is refused (ValueError: the process does not start)."""
    found: list[str] = []
    for value in values:
        text = str(value).strip()
        if not text:
            continue
        try:
            found.append(str(ipaddress.ip_network(text, strict=True)))
        except ValueError as exc:
            raise ValueError(f"{text!r} is not a CIDR network (such as 192.0.2.0/24 or 2001:db8::/32)") from exc
    if len(found) > MAX_RANGES:
        raise ValueError(f"at most {MAX_RANGES} ranges")
    return tuple(dict.fromkeys(found))


@dataclass(frozen=True)
class IPRanges:
    api: tuple[str, ...]
    notifications: tuple[str, ...]
    sentinel: tuple[str, ...]
    vcs: tuple[str, ...]
    as_of: datetime  # when this process read them (whole seconds: what an HTTP date holds)

    def document(self) -> dict[str, list[str]]:
        """HCP's answer: a plain JSON object (not JSON:API)."""
        return {
            "api": list(self.api),
            "notifications": list(self.notifications),
            "sentinel": list(self.sentinel),
            "vcs": list(self.vcs),
        }

    def last_modified(self) -> str:
        return format_datetime(self.as_of.astimezone(UTC), usegmt=True)

    def modified_since(self, header: str | None) -> bool:
        """Whether a client that has the ranges of `header` (an `If-Modified-Since` value) needs them again. A value
        that is no HTTP date is ignored, as HTTP says (the whole answer)."""
        if not header:
            return True
        try:
            since = parsedate_to_datetime(header)
        except (TypeError, ValueError, IndexError):
            return True
        if since.tzinfo is None:
            since = since.replace(tzinfo=UTC)
        return self.as_of > since


def of_settings(
    api: Iterable[str], notifications: Iterable[str], sentinel: Iterable[str], vcs: Iterable[str], now: datetime
) -> IPRanges:
    return IPRanges(
        tuple(api), tuple(notifications), tuple(sentinel), tuple(vcs), now.astimezone(UTC).replace(microsecond=0)
    )
