"""/api/v2 resources: a workspace's current-state resources and the organization-wide search (tfc-api.md §4.8)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from terrace.web import state_serializers
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import JSONAPIResponse, respond_page

router = APIRouter(prefix="/api/v2")


@router.get("/workspaces/{workspace_id}/resources")
def workspace_resources(
    workspace_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    found = container.state_versions.resources(principal, workspace_id)
    return respond_page(request, found, state_serializers.indexed_resource)


@router.get("/organizations/{org}/resources")
def search_resources(org: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    params = request.query_params
    found = container.state_versions.search_resources(
        principal, org, params.get("q", ""), params.get("filter[type]", ""), params.get("filter[provider]", "")
    )
    return respond_page(request, found, lambda res: state_serializers.indexed_resource(res, with_workspace=True))
