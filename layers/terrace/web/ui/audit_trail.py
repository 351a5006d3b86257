"""An organization's audit trail page (Organization settings → Audit trail): its events, newest first, filtered
by actor, action, resource and time, through `AuditTrail` (its owners, site admins and auditors; 404 to others)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from terrace.domain.audit import Filters
from terrace.domain.errors import Invalid
from terrace.web.deps import ContainerDep
from terrace.web.ui.session import SessionDep, render

router = APIRouter(prefix="/app", include_in_schema=False)
FIELDS = ("actor", "action", "resource", "since", "until")
SHOWN = 200  # events on the page; narrow the filters for older ones


@router.get("/{organization}/settings/audit-trail")
def audit_trail_page(request: Request, container: ContainerDep, session: SessionDep, organization: str) -> Any:
    given = {name: (request.query_params.get(name) or "").strip()[:200] for name in FIELDS}
    org = container.audit_trail.organization(session.principal, organization)
    error = ""
    try:
        events = container.audit_trail.read(session.principal, org, Filters(**given))
    except Invalid as exc:
        events, error = [], exc.detail
    newest = list(reversed(events))[:SHOWN]
    return render(request, "audit_trail.html", session, status=422 if error else 200, organization=org.name,
                  events=newest, total=len(events), shown=SHOWN, filters=given, error=error,
                  org_tab="/settings")  # fmt: skip
