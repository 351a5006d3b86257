"""/api/v2 data retention policies of organizations and workspaces (`services/workspaces/retention.py`).

`GET` answers the policy (404 when none is set); `POST` (TFE v202401+ types) and `PATCH` (the v202311
`data-retention-policies` type, go-tfe ≤ 1.41) set it; `DELETE` removes it (204, also when none was set)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response

from terrace.domain.retention import DAYS, DELETE_OLDER, TYPES, RetentionPolicy
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import JSONAPIResponse, JSONBody, attributes, read_document, resource, respond

router = APIRouter(prefix="/api/v2")
ORG_PATH = "/organizations/{org}/relationships/data-retention-policy"
WS_PATH = "/workspaces/{workspace_id}/relationships/data-retention-policy"


def serialize(policy: RetentionPolicy) -> dict[str, Any]:
    attrs = {DAYS: policy.days} if policy.kind == DELETE_OLDER else {}
    return resource(policy.resource_type, policy.id, attrs)


def _body(body: Any) -> tuple[str, dict[str, Any]]:
    data = read_document(body, tuple(TYPES))
    return data["type"], attributes(data)


@router.get(ORG_PATH)
def read_org_policy(org: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond(serialize(container.retention_policies.organization_policy(principal, org)))


@router.post(ORG_PATH)
@router.patch(ORG_PATH)
def set_org_policy(org: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    resource_type, attrs = _body(body)
    policy = container.retention_policies.set_organization_policy(principal, org, resource_type, attrs)
    return respond(serialize(policy))


@router.delete(ORG_PATH)
def delete_org_policy(org: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.retention_policies.delete_organization_policy(principal, org)
    return Response(status_code=204)


@router.get(WS_PATH)
def read_ws_policy(workspace_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond(serialize(container.retention_policies.workspace_policy(principal, workspace_id)))


@router.post(WS_PATH)
@router.patch(WS_PATH)
def set_ws_policy(
    workspace_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    resource_type, attrs = _body(body)
    policy = container.retention_policies.set_workspace_policy(principal, workspace_id, resource_type, attrs)
    return respond(serialize(policy))


@router.delete(WS_PATH)
def delete_ws_policy(workspace_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.retention_policies.delete_workspace_policy(principal, workspace_id)
    return Response(status_code=204)
