"""TFC's internal plan endpoints, which go-tfe's tests of paid features call to change their organization's plan:
`GET /admin/feature-sets` and `POST /admin/organizations/:org/subscription`. Terrace has no tiers: every
organization has every feature Terrace has, unless a site admin puts it on a feature set that withholds one
(`domain/entitlements.py`: the sets carry HCP's plan names; what they withhold takes effect at once). 404 to
everyone else, as the rest of the admin API."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from terrace.domain.entitlements import FeatureSet
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import JSONAPIResponse, JSONBody, resource, respond, respond_page

router = APIRouter(prefix="/api/v2/admin")


def _feature_set(fs: FeatureSet, current: bool = True) -> dict[str, Any]:
    return resource("feature-sets", fs.id, {"name": fs.name, "identifier": fs.identifier, "is-current": current})


@router.get("/feature-sets")
def list_feature_sets(request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    found = container.site_admin.feature_sets(principal, request.query_params.get("q") or "")
    return respond_page(request, found, _feature_set)


@router.post("/organizations/{name}/subscription")
def update_subscription(name: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    data = body.get("data") if isinstance(body, dict) else None
    relationships = data.get("relationships") if isinstance(data, dict) else None
    related = relationships.get("feature-set") if isinstance(relationships, dict) else None
    wanted = related.get("data") if isinstance(related, dict) else None
    feature_set_id = wanted.get("id") if isinstance(wanted, dict) else None
    org, fs = container.site_admin.set_feature_set(principal, name, feature_set_id)  # 404 first to non-admins
    attributes = {"is-active": True, "is-public-free-tier": False, "runs-ceiling": None, "agents-ceiling": None}
    relationships = {"feature-set": {"data": {"type": "feature-sets", "id": fs.id}},
                     "organization": {"data": {"type": "organizations", "id": org.name}}}  # fmt: skip
    return respond(resource("subscriptions", f"sub-{org.id}", attributes, relationships), 201)
