"""Storage of audit events: one item per event, append-only, in a partition per organization and UTC day
(`audit#<org>#<YYYY-MM-DD>`, sort key `<epoch µs>#<id>`: read back in order), listed by organization through gsi1
(`audit#<org>`) so that `delete_all_of` finds every day, and expiring with the table's TTL (`expires_at`) after the
retention setting. The daily export (`export.py`) keeps its claim and cursor in one item (`auditexport#claim`) and
notes each object it wrote under its day (`auditexport#<YYYY-MM-DD>`, sort key the organization; gsi1
`auditexport-of#<org>`), so that the retention finds every object of a day, and an organization's deletion every
object of the organization, without listing the bucket. The only module of `services/audit/` that knows
the table: the entity is `domain/audit.py`."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import UTC, date, datetime, timedelta
from typing import Any

from terrace.adapters.blobs import BlobStore
from terrace.adapters.table import ConditionFailed, Table
from terrace.domain.audit import Actor, AuditEvent

DAY_S = 24 * 3600
_EXPORT_CLAIM = ("auditexport#claim", "last")
SITE_FOLDER = "_site"


def object_key(organization: str, day: date) -> str:
    """The blob of an organization's exported day (the site's own events under `audit/_site/`)."""
    return f"audit/{organization or SITE_FOLDER}/{day:%Y/%m/%d}.jsonl"


def _exports_of(organization: str) -> str:
    return f"auditexport-of#{organization or '-'}"


def day_of(epoch_us: int) -> str:
    return datetime.fromtimestamp(epoch_us / 1_000_000, UTC).strftime("%Y-%m-%d")


def day_partition(organization: str, day: str) -> str:
    return f"audit#{organization}#{day}"


def listed_under(organization: str) -> str:
    return f"audit#{organization}"


def to_item(event: AuditEvent, expires_at: int | None) -> dict[str, Any]:
    sort_key = f"{event.epoch_us:017d}#{event.id}"
    item: dict[str, Any] = {
        "pk": day_partition(event.organization, day_of(event.epoch_us)),
        "sk": sort_key,
        "gsi1pk": listed_under(event.organization),
        "gsi1sk": sort_key,
        "id": event.id,
        "timestamp": event.timestamp,
        "epoch_us": event.epoch_us,
        "organization": event.organization,
        "actor": {"kind": event.actor.kind, "id": event.actor.id, "name": event.actor.name},
        "source": event.source,
        "action": event.action,
        "resource_type": event.resource_type,
        "resource_id": event.resource_id,
        "outcome": event.outcome,
        "request_id": event.request_id,
        "meta": dict(event.meta),
    }
    if event.actor.token_id:
        item["actor"]["token_id"] = event.actor.token_id
    if expires_at is not None:
        item["expires_at"] = expires_at
    return item


def from_item(item: Mapping[str, Any]) -> AuditEvent:
    actor = item.get("actor") or {}
    return AuditEvent(
        id=item["id"],
        timestamp=item["timestamp"],
        epoch_us=int(item["epoch_us"]),
        organization=item.get("organization", ""),
        actor=Actor(actor.get("kind", ""), actor.get("id", ""), actor.get("name", ""), actor.get("token_id")),
        source=item.get("source", ""),
        action=item["action"],
        resource_type=item.get("resource_type", ""),
        resource_id=item.get("resource_id", ""),
        outcome=int(item.get("outcome", 0)),
        request_id=item.get("request_id", ""),
        meta=dict(item.get("meta") or {}),
    )


class AuditStore:
    def __init__(self, table: Table, retention_days: int) -> None:
        self._table = table
        self._retention_s = retention_days * DAY_S if retention_days > 0 else None

    def append(self, event: AuditEvent) -> None:
        """Write `event` once (an id written twice is refused by the table: append-only)."""
        expires = event.epoch_us // 1_000_000 + self._retention_s if self._retention_s else None
        self._table.put(to_item(event, expires), if_absent=True)

    def between(self, organization: str, since_us: int, until_us: int, limit: int) -> Iterator[AuditEvent]:
        """The organization's events from `since_us` to `until_us` (epoch µs), oldest first, at most `limit`."""
        day = datetime.fromtimestamp(since_us / 1_000_000, UTC).date()
        last = datetime.fromtimestamp(until_us / 1_000_000, UTC).date()
        given = 0
        while day <= last and given < limit:
            for item in self._table.query(day_partition(organization, day.isoformat())):
                epoch_us = int(item["epoch_us"])
                if since_us <= epoch_us <= until_us:
                    yield from_item(item)
                    given += 1
                    if given >= limit:
                        return
            day += timedelta(days=1)

    def delete_all_of(self, organization: str, blobs: BlobStore | None = None) -> None:
        """Every event of an organization and, given the blob store, every object the export wrote of it (no
        check: the organization's deletion checked)."""
        items = self._table.query(listed_under(organization), index="gsi1")
        if items:
            self._table.batch_delete([(item["pk"], item["sk"]) for item in items])
        if blobs is None:
            return
        notes = self._table.query(_exports_of(organization), index="gsi1")
        for note in notes:
            blobs.delete(object_key(organization, date.fromisoformat(note["gsi1sk"])))
        if notes:
            self._table.batch_delete([(note["pk"], note["sk"]) for note in notes])

    def claim_export(self, now: int, interval_s: int) -> dict[str, Any] | None:
        """The export's claim (with its cursor: `exported`, `kept_from`) when the last export of any process is
        `interval_s` old and this process won the conditional write; None otherwise."""
        item = self._table.get(*_EXPORT_CLAIM)
        if item is not None and now - int(item["at"]) < interval_s:
            return None
        version = int((item or {}).get("version", 0))
        claim = {**(item or {}), "pk": _EXPORT_CLAIM[0], "sk": _EXPORT_CLAIM[1], "at": now, "version": version + 1}
        try:
            if item is None:
                self._table.put(claim, if_absent=True)
            else:
                self._table.put(claim, if_version=version)
        except ConditionFailed:
            return None  # another process took this export
        return claim

    def save_export_cursor(self, claim: dict[str, Any], exported: str, kept_from: str, logged_us: int) -> None:
        """The days done: every day up to `exported` is exported whole, objects from `kept_from` on are kept,
        events up to `logged_us` were sent to the log sink."""
        version = int(claim["version"])
        cursor = {"exported": exported, "kept_from": kept_from, "logged_us": logged_us, "version": version + 1}
        try:
            self._table.put({**claim, **cursor}, if_version=version)
        except ConditionFailed:
            pass  # a later claim of another process carries on from the cursor it read

    def note_exported(self, day: str, organization: str) -> None:
        note = {"pk": f"auditexport#{day}", "sk": organization or "-", "gsi1pk": _exports_of(organization)}
        self._table.put({**note, "gsi1sk": day})

    def exported_on(self, day: str) -> list[str]:
        """The organizations whose object of `day` the export wrote (SITE for the site's)."""
        return [("" if item["sk"] == "-" else item["sk"]) for item in self._table.query(f"auditexport#{day}")]

    def forget_exported(self, day: str) -> None:
        items = self._table.query(f"auditexport#{day}")
        if items:
            self._table.batch_delete([(item["pk"], item["sk"]) for item in items])
