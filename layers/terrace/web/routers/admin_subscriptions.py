"""TFC's internal plan endpoints, which go-tfe's tests of paid features call to upgrade their organization:
`GET /admin/feature-sets` and `POST /admin/organizations/:org/subscription`. Terrace has no tiers (every
organization has every feature), so a site admin gets one feature set and every subscription change is accepted
and changes nothing. 404 to everyone else, as the rest of the admin API."""

from __future__ import annotations

from fastapi import APIRouter, Request

from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import JSONAPIResponse, resource, respond, respond_page

router = APIRouter(prefix="/api/v2/admin")
EVERYTHING = "fs-everything"


@router.get("/feature-sets")
def list_feature_sets(request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    container.authz.require_site_admin(principal)
    name = request.query_params.get("q") or "Terrace"
    feature_set = resource("feature-sets", EVERYTHING, {"name": name, "identifier": "everything", "is-current": True})
    return respond_page(request, [feature_set], lambda fs: fs)


@router.post("/organizations/{name}/subscription")
def update_subscription(name: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    org = container.site_admin.organization(principal, name)  # site admins only; 404 for an unknown organization
    attributes = {"is-active": True, "is-public-free-tier": False, "runs-ceiling": None, "agents-ceiling": None}
    relationships = {"feature-set": {"data": {"type": "feature-sets", "id": EVERYTHING}},
                     "organization": {"data": {"type": "organizations", "id": org.name}}}  # fmt: skip
    return respond(resource("subscriptions", f"sub-{org.id}", attributes, relationships), 201)
