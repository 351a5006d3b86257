"""The audit trail's daily export: one JSON-lines object per organization and UTC day in the blob store
(`audit/<organization>/<yyyy>/<mm>/<dd>.jsonl`; the site's own events under `audit/_site/`), each line one event
exactly as the audit trail API answers it (`domain/audit.py: event_document`), oldest first.

Run by the reaper (`services/runs/reaper.py`: every minute on AWS, every second in the embedded server's workers)
as one of its sweeps, at most once per `EXPORT_INTERVAL_S` across all processes (a conditional write of the
store's claim). Each export writes every day from the first one not yet exported whole (yesterday on the first
export, at most `CATCH_UP_DAYS` back) to today, today's object as it stands so far. It is idempotent: the events
of a day are append-only and written in their order, so writing a day again writes the same object (plus any
event recorded since). Objects older than the retention setting (`TERRACE_AUDIT_RETENTION_DAYS`, as the events'
own TTL; 0 keeps them) are deleted, found through the days' notes in the store, not by listing the bucket.

With a log sink (on AWS `TERRACE_AUDIT_LOG_GROUP`: a CloudWatch Logs group, a stream per organization) each export
also sends the events recorded since the last one sent, up to `LOG_MARGIN_S` before the export (a request still
being answered records its event after it), the same documents one a line; the cursor (`logged_us`) advances
only when every stream took its events (at least once: a failed send is sent again by the next export)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from datetime import UTC, date, datetime, time, timedelta

from terrace.adapters.blobs import BlobStore
from terrace.adapters.log_sink import LogSink
from terrace.domain import clock
from terrace.domain.audit import SITE, AuditEvent, event_document
from terrace.services.access.organizations import OrganizationService
from terrace.services.audit.store import SITE_FOLDER, AuditStore, object_key

__all__ = ["AuditExport", "day_bounds", "jsonl", "line", "object_key"]

log = logging.getLogger("terrace.audit")

EXPORT_INTERVAL_S = 3600
CATCH_UP_DAYS = 31  # an export after a long stop writes at most this many days back
DAY_MAX_EVENTS = 500_000  # events of one organization's day in one object (a bigger day is cut and logged)
CONTENT_TYPE = "application/x-ndjson"
LOG_MARGIN_S = 300  # events this recent wait for the next export's send (an answer outlives no API timeout)
LOG_MAX_AGE_S = 13 * 24 * 3600  # CloudWatch Logs takes no event older than 14 days


def day_bounds(day: date) -> tuple[int, int]:
    """The first and last epoch microsecond of a UTC day (both included, as the API's `since` and `until`)."""
    start = datetime.combine(day, time(), UTC)
    first = int(start.timestamp()) * 1_000_000
    return first, first + 24 * 3600 * 1_000_000 - 1


def line(event: AuditEvent) -> str:
    """One event as one compact JSON document (keys sorted: the same event gives the same bytes)."""
    return json.dumps(event_document(event), sort_keys=True, separators=(",", ":"))


def jsonl(events: Iterable[AuditEvent]) -> bytes:
    return "".join(f"{line(event)}\n" for event in events).encode()


class AuditExport:
    def __init__(
        self,
        store: AuditStore,
        blobs: BlobStore,
        organizations: OrganizationService,
        retention_days: int,
        now: Callable[[], float] = clock.epoch,
        log_sink: LogSink | None = None,
    ) -> None:
        self._store, self._blobs, self._orgs = store, blobs, organizations
        self._retention_days, self._now, self._log_sink = retention_days, now, log_sink

    def sweep_if_due(self, interval_s: int = EXPORT_INTERVAL_S) -> dict[str, int] | None:
        """Export when the last export (of any process) is `interval_s` old; None when not due or taken."""
        claim = self._store.claim_export(int(self._now()), interval_s)
        if claim is None:
            return None
        today = datetime.fromtimestamp(self._now(), UTC).date()
        done = claim.get("exported")
        first = date.fromisoformat(done) + timedelta(days=1) if done else today - timedelta(days=1)
        first = max(first, today - timedelta(days=CATCH_UP_DAYS))
        summary = {"days": 0, "objects": 0, "events": 0, "expired": 0, "logged": 0}
        day = first
        while day <= today:
            written, events = self.export_day(day)
            summary["days"] += 1
            summary["objects"] += written
            summary["events"] += events
            day += timedelta(days=1)
        kept_from = self._expire(date.fromisoformat(claim.get("kept_from") or first.isoformat()), today, summary)
        logged_us = self._send_logs(int(claim.get("logged_us") or day_bounds(first)[0] - 1), summary)
        self._store.save_export_cursor(claim, (today - timedelta(days=1)).isoformat(), kept_from.isoformat(), logged_us)
        return summary

    def _send_logs(self, after_us: int, summary: dict[str, int]) -> int:
        """Send the events recorded after `after_us` to the log sink; the new cursor (unchanged on a failure)."""
        if self._log_sink is None:
            return after_us
        now_us = int(self._now() * 1_000_000)
        since_us = max(after_us + 1, now_us - LOG_MAX_AGE_S * 1_000_000)
        until_us = now_us - LOG_MARGIN_S * 1_000_000
        if until_us < since_us:
            return after_us
        sent = 0
        for organization in [SITE, *(org.key for org in self._orgs.all())]:
            events = list(self._store.between(organization, since_us, until_us, DAY_MAX_EVENTS))
            try:
                self._log_sink.send(organization or SITE_FOLDER, [(e.epoch_us // 1000, line(e)) for e in events])
            except Exception:  # the next export sends them again; the objects in the bucket have them
                log.exception("audit export: the log sink did not take %s's events", organization or "the site")
                return after_us
            sent += len(events)
        summary["logged"] = sent
        return until_us

    def export_day(self, day: date) -> tuple[int, int]:
        """Write the objects of `day`, one per organization that has events that day: (objects, events)."""
        since_us, until_us = day_bounds(day)
        objects = events = 0
        for organization in [SITE, *(org.key for org in self._orgs.all())]:
            found = list(self._store.between(organization, since_us, until_us, DAY_MAX_EVENTS))
            if not found:
                continue
            if len(found) >= DAY_MAX_EVENTS:
                log.error("audit export: %s has over %d events on %s; the object holds the first", organization,
                          DAY_MAX_EVENTS, day)  # fmt: skip
            self._blobs.put(object_key(organization, day), jsonl(found), CONTENT_TYPE)
            self._store.note_exported(day.isoformat(), organization)
            objects += 1
            events += len(found)
        return objects, events

    def _expire(self, kept_from: date, today: date, summary: dict[str, int]) -> date:
        """Delete the objects of the days past the retention setting; the first day still kept."""
        if self._retention_days <= 0:
            return kept_from
        oldest_kept = today - timedelta(days=self._retention_days)
        day = kept_from
        while day < oldest_kept:
            for organization in self._store.exported_on(day.isoformat()):
                self._blobs.delete(object_key(organization, day))
                summary["expired"] += 1
            self._store.forget_exported(day.isoformat())
            day += timedelta(days=1)
        return max(day, kept_from)
