"""The audit trail's reads: `GET /api/v2/organization/audit-trail` (HCP Terraform's shape, for an organization
token), `GET /api/v2/organizations/:org/audit-trail` (its owners, site admins and auditors, with filters), the
site's own events and the recorder's counts for site admins and auditors (`/api/v2/admin/audit-trail`)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from terrace.domain.audit import AuditEvent, Filters, event_document
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import paginate

router = APIRouter(prefix="/api/v2")


def filters_of(request: Request) -> Filters:
    query = request.query_params
    return Filters(
        since=query.get("since") or "",
        until=query.get("until") or "",
        actor=query.get("filter[actor]") or "",
        action=query.get("filter[action]") or "",
        resource=query.get("filter[resource]") or "",
    )


def _page(request: Request, events: list[AuditEvent]) -> JSONResponse:
    page, meta, _ = paginate(request, events)
    hcp = {key.replace("-", "_"): value for key, value in meta["pagination"].items() if key != "page-size"}
    return JSONResponse({"data": [event_document(e) for e in page], "pagination": hcp})


@router.get("/organization/audit-trail")
def organization_token_trail(request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONResponse:
    return _page(request, container.audit_trail.of_token(principal, filters_of(request)))


@router.get("/organizations/{organization}/audit-trail")
def organization_trail(
    organization: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONResponse:
    return _page(request, container.audit_trail.of_organization(principal, organization, filters_of(request)))


@router.get("/admin/audit-trail")
def site_trail(request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONResponse:
    return _page(request, container.audit_trail.of_site(principal, filters_of(request)))


@router.get("/admin/audit-trail/status")
def recorder_status(container: ContainerDep, principal: PrincipalDep) -> JSONResponse:
    """How many events this process recorded and failed to write (a failure is also logged at ERROR)."""
    recorded, failed = container.audit_trail.counts(principal)
    attributes = {"recorded": recorded, "failed": failed}
    return JSONResponse({"data": {"type": "audit-trail-status", "attributes": attributes}})
