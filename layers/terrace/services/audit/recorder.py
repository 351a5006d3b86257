"""The one recorder of audit events. The app's audit middleware (`web/audit_trail.py`) hands it every mutating
request, every state read and every sign-in and sign-out as they end; it names the action, finds the organization
(from the path, the caller's token or the workspace or run the path names) and appends the event.

Recording never fails the action it records: a failed write is counted (`failures`, shown by the site admin
API's audit status) and logged at ERROR with the whole event, so no event is lost silently."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping

from terrace.domain import clock
from terrace.domain.audit import ANONYMOUS, SITE, Actor, AuditEvent, RecordedRequest, action_of
from terrace.domain.ids import new_id
from terrace.domain.principal import Principal
from terrace.services.audit.store import AuditStore

log = logging.getLogger("terrace.audit")

# path parameters that name an organization, and those naming a resource whose organization a lookup finds
ORGANIZATION_PARAMS = ("organization", "org", "organization_name")
KNOWN = 10_000
# Whose trail an event is in: an organization's holds what was done in it, by its members, teams and tokens (HCP
# Terraform's trail of an organization); what the site did to it — its creation (its deletion finds it gone), the
# site admin API's changes — is the site's record, read by site admins and auditors, which outlives the
# organization (its own trail is purged with it)
SITE_ADMIN_API = "/api/v2/admin/"
ORGANIZATION_CREATE = ("POST", "/api/v2/organizations")
OrganizationOf = Callable[[str, str], str | None]  # (parameter, value) -> organization key, or None


def actor_of(principal: Principal | None) -> Actor:
    if principal is None:
        return ANONYMOUS
    return Actor(principal.kind.value, principal.subject_id, principal.username, principal.token_id)


class AuditRecorder:
    def __init__(self, store: AuditStore, organization_of: OrganizationOf) -> None:
        self._store = store
        self._organization_of = organization_of
        self._lock = threading.Lock()
        self.failures = 0  # events that could not be written since this process started
        self.recorded = 0
        self._known: dict[str, str] = {}  # id -> organization key

    def record_request(self, request: RecordedRequest) -> AuditEvent | None:
        """Record one request's event; never raises (a failure is counted and logged)."""
        try:
            event = self.event_of(request)
        except Exception:  # noqa: BLE001 - naming the event must not fail the request either
            log.exception("audit: could not name the event of %s %s", request.method, request.template)
            self._count_failure()
            return None
        self.append(event)
        return event

    def append(self, event: AuditEvent) -> bool:
        try:
            self._store.append(event)
        except Exception:  # noqa: BLE001 - any storage failure: counted, logged, never raised
            self._count_failure()
            log.error("audit: event not written (%d failed so far): %r", self.failures, event, exc_info=True)
            return False
        with self._lock:
            self.recorded += 1
        return True

    def _organization_of_id(self, name: str, value: str) -> str | None:
        """The organization of a workspace, run or state version id: it never changes, so it is read once per
        process (at most KNOWN ids held) and a request's event costs no read of what the request itself read."""
        known = self._known.get(value)
        if known is None:
            known = self._organization_of(name, value)
            if known is not None:
                if len(self._known) >= KNOWN:
                    self._known.clear()
                self._known[value] = known
        return known

    def _count_failure(self) -> None:
        with self._lock:
            self.failures += 1

    def event_of(self, request: RecordedRequest) -> AuditEvent:
        resource_type, action = action_of(request.method, request.template, request.params)
        if request.verb:
            action = f"{resource_type}.{request.verb}"
        resource_id = request.created.get("id") or _last_identifier(request.template, request.params)
        if resource_type == "workspace" and request.workspace and not request.created.get("id"):
            resource_id = request.workspace  # `/app/{organization}/workspaces/{name}/...`: its id, as the API's
        meta: dict[str, str] = {"route": f"{request.method.upper()} {request.template}"}
        if request.created.get("name"):
            meta["name"] = request.created["name"]
        now = clock.utcnow()
        return AuditEvent(
            id=new_id("ae"),
            timestamp=clock.iso(now),
            epoch_us=int(now.timestamp() * 1_000_000),
            organization=self._organization(request, resource_type),
            actor=actor_of(request.principal),
            source=request.source,
            action=action,
            resource_type=resource_type,
            resource_id=resource_id,
            outcome=request.status,
            request_id=request.request_id,
            meta=meta,
        )

    def _organization(self, request: RecordedRequest, resource_type: str) -> str:
        if request.template.startswith(SITE_ADMIN_API) or (request.method, request.template) == ORGANIZATION_CREATE:
            return SITE  # the site admin API's actions, an organization's creation: the site's record
        named = _organization_param(request.template)
        if named and request.params.get(named):
            return self._organization_of("organization", request.params[named]) or SITE
        if request.organization:  # where the Authorizer decided it: a route naming only a resource's id
            return request.organization
        for name, value in [*request.params.items(), ("id", request.created.get("id", ""))]:
            found = self._organization_of_id(name, value) if value else None
            if found:
                return found
        if request.principal is not None and request.principal.organization:
            return request.principal.organization
        return SITE


def _organization_param(template: str) -> str | None:
    """The path parameter that names an organization: one of ORGANIZATION_PARAMS, or the one after
    `/organizations/` (`/api/v2/organizations/{name}`)."""
    segments = template.split("/")
    for at, segment in enumerate(segments):
        name = segment.strip("{}")
        if segment.startswith("{") and (name in ORGANIZATION_PARAMS or segments[at - 1] == "organizations"):
            return name
    return None


def _last_identifier(template: str, params: Mapping[str, str]) -> str:
    """The value of the route's last path parameter (the resource the request is about, or its parent)."""
    names = [segment.strip("{}") for segment in template.split("/") if segment.startswith("{")]
    for name in reversed(names):
        if name != "action" and params.get(name):
            return str(params[name])
    return ""
