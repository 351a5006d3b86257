"""/api/v2 change requests (HCP Terraform's): a workspace's list, one request, its archive. They are made in bulk
through the explorer (`web/routers/explorer.py`: `POST /organizations/:org/explorer/bulk-actions`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from terrace.domain.change_requests import ChangeRequest
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import JSONAPIResponse, respond, respond_page

router = APIRouter(prefix="/api/v2")


def change_request(cr: ChangeRequest) -> dict[str, Any]:
    return {
        "id": cr.id,
        "type": "workspace-change-requests",
        "attributes": {
            "subject": cr.subject,
            "message": cr.message,
            "created-at": cr.created_at,
            "updated-at": cr.archived_at or cr.created_at,
            "archived-at": cr.archived_at,
            "archived-by": cr.archived_by,
        },
        "relationships": {"workspace": {"data": {"id": cr.workspace_id, "type": "workspaces"}}},
    }


@router.get("/workspaces/{workspace_id}/change-requests")
def list_change_requests(
    workspace_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    return respond_page(request, container.change_requests.list(principal, workspace_id), change_request)


@router.get("/workspaces/change-requests/{cr_id}")
def read_change_request(cr_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond(change_request(container.change_requests.get(principal, cr_id)))


@router.post("/workspaces/change-requests/{cr_id}")
@router.patch("/workspaces/change-requests/{cr_id}")  # HCP's documentation names POST and shows PATCH: both archive
def archive_change_request(cr_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond(change_request(container.change_requests.archive(principal, cr_id)))
