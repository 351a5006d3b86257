"""Reading the audit trail: an organization's events, oldest first, after `since` (by default the last 14 days,
as HCP Terraform's API), filtered by actor, action, resource and time. Its owners, its organization token, site
admins and site auditors may read it (`Action.READ_AUDIT_TRAIL`, decided in `services/access/authz.py`); the
site's own events (sign-ins, user tokens) are read by site admins and auditors only."""

from __future__ import annotations

from datetime import datetime, timedelta

from terrace.domain import clock
from terrace.domain.audit import SITE, AuditEvent, Filters
from terrace.domain.errors import Invalid, NotFound
from terrace.domain.principal import Principal, PrincipalKind
from terrace.services.access.authz import Action, Authorizer
from terrace.services.access.organizations import Organization, OrganizationService
from terrace.services.audit.recorder import AuditRecorder
from terrace.services.audit.store import AuditStore

DEFAULT_WINDOW = timedelta(days=14)
MAX_WINDOW = timedelta(days=366)  # one read walks at most this many days' partitions
MAX_EVENTS = 10_000  # read of one window at most; a wider one is narrowed with `since`/`until`


def _instant(raw: str, name: str) -> datetime:
    try:
        moment = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError as exc:
        raise Invalid(f"{name} must be an ISO 8601 time, such as 2026-01-02T03:04:05Z", pointer=f"/{name}") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=clock.utcnow().tzinfo)
    return moment


def _after(raw: str) -> int:
    """The first microsecond of events after `since` (HCP's "created after this date"), at the precision `since` was
    given in, no finer than the trail's timestamps (milliseconds): go-tfe sends whole seconds (RFC 3339 without
    the fraction), so `since=10:00:05Z` is after 10:00:05.999, as it is at a second's precision."""
    since_us = int(_instant(raw, "since").timestamp() * 1_000_000)
    if "T" not in raw.upper():
        return since_us  # a date: from its start
    unit = 1_000 if "." in raw else 1_000_000
    return (since_us // unit + 1) * unit


def _matches(event: AuditEvent, filters: Filters) -> bool:
    if filters.actor and filters.actor not in (event.actor.id, event.actor.name):
        return False
    if filters.action and not (event.action == filters.action or event.action.startswith(filters.action)):
        return False
    return not filters.resource or filters.resource in (event.resource_id, event.resource_type)


class AuditTrail:
    def __init__(
        self, authz: Authorizer, organizations: OrganizationService, store: AuditStore, recorder: AuditRecorder
    ) -> None:
        self._authz, self._orgs, self._store, self._recorder = authz, organizations, store, recorder

    def of_token(self, principal: Principal, filters: Filters) -> list[AuditEvent]:
        """`GET /organization/audit-trail`: the trail of the organization whose token calls (HCP's shape): its
        audit trail token, or its organization token."""
        if principal.kind not in (PrincipalKind.ORGANIZATION, PrincipalKind.AUDIT_TRAIL) or not principal.organization:
            raise NotFound("the audit trail is read with an organization's audit trail token or organization token")
        org = self._orgs.by_key(principal.organization)
        return self.read(principal, org, filters)

    def of_organization(self, principal: Principal, name: str, filters: Filters) -> list[AuditEvent]:
        return self.read(principal, self._orgs.get(principal, name, Action.READ_AUDIT_TRAIL), filters)

    def of_site(self, principal: Principal, filters: Filters) -> list[AuditEvent]:
        """The events of no organization: sign-ins and sign-outs, users' own tokens (site admins and auditors)."""
        self._require_site_reader(principal)
        return self._events(SITE, filters)

    def counts(self, principal: Principal) -> tuple[int, int]:
        """(events recorded, events that failed to be written) by this process (site admins and auditors)."""
        self._require_site_reader(principal)
        return self._recorder.recorded, self._recorder.failures

    def write_failures(self) -> int:
        """Events this process failed to write, for the health endpoint `GET /api/v2/ping` (a count, no event: it
        needs no principal, so monitoring can alert on it)."""
        return self._recorder.failures

    @staticmethod
    def _require_site_reader(principal: Principal) -> None:
        if principal.kind is not PrincipalKind.USER or not (principal.site_admin or principal.site_auditor):
            raise NotFound("not found")

    def organization(self, principal: Principal, name: str) -> Organization:
        """The organization a page of its trail is about (checked as its trail)."""
        return self._orgs.get(principal, name, Action.READ_AUDIT_TRAIL)

    def read(self, principal: Principal, org: Organization, filters: Filters) -> list[AuditEvent]:
        self._authz.require(principal, Action.READ_AUDIT_TRAIL, org.view)
        return self._events(org.key, filters)

    def _events(self, organization: str, filters: Filters) -> list[AuditEvent]:
        until = _instant(filters.until, "until") if filters.until else clock.utcnow()
        since = _instant(filters.since, "since") if filters.since else until - DEFAULT_WINDOW
        if since > until:
            raise Invalid("since must be before until", pointer="/since")
        if until - since > MAX_WINDOW:
            raise Invalid("since and until may be at most 366 days apart", pointer="/since")
        after = _after(filters.since) if filters.since else int(since.timestamp() * 1_000_000)
        events = self._store.between(organization, after, int(until.timestamp() * 1_000_000), MAX_EVENTS)
        return [event for event in events if _matches(event, filters)]
