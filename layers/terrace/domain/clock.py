"""Time in the formats clients parse: go-tfe's jsonapi needs `YYYY-MM-DDTHH:MM:SS.fffZ`."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime | None = None) -> str:
    moment = moment or utcnow()
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def now_iso() -> str:
    return iso(utcnow())


def epoch() -> float:
    return utcnow().timestamp()
