"""/api/v2 notification configurations of workspaces, teams and projects (`services/notifications/`), in go-tfe's
`notification_configuration.go` shape: the token goes in, never out; `delivery-responses` are the last answers."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from terrace.domain.notifications import PROJECT, TEAM, WORKSPACE, NotificationConfiguration
from terrace.web import integration_bodies
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import (
    MAX_PAGE_SIZE,
    JSONAPIResponse,
    JSONBody,
    attributes,
    read_document,
    ref,
    refs,
    resource,
    respond,
    respond_page,
)

router = APIRouter(prefix="/api/v2")
TYPE = "notification-configurations"


def serialize(nc: NotificationConfiguration) -> dict[str, Any]:
    return resource(
        TYPE,
        nc.id,
        {
            "name": nc.name,
            "destination-type": nc.destination_type,
            "enabled": nc.enabled,
            "url": nc.url,
            "token": None,  # write-only
            "triggers": list(nc.triggers),
            "email-addresses": list(nc.email_addresses),
            "delivery-responses": list(reversed(nc.delivery_responses)),  # newest first, as TFC lists them
            "created-at": nc.created_at,
            "updated-at": nc.updated_at,
        },
        {"subscribable": ref(nc.subscribable_type, nc.subscribable_id), "users": refs("users", nc.email_user_ids)},
        links={"self": f"/api/v2/{TYPE}/{nc.id}"},
    )


def _document(body: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    data = read_document(body, TYPE)
    return attributes(data), dict(data.get("relationships") or {})


@router.get("/workspaces/{workspace_id}/notification-configurations")
def list_workspace_notifications(
    workspace_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    found = container.notification_configurations.list(principal, WORKSPACE, workspace_id)
    asked = any(p in request.query_params for p in ("page[number]", "page[size]"))
    if not asked and len(found) <= MAX_PAGE_SIZE:  # HCP Terraform's whole list, without pagination (go-tfe checks)
        return respond([serialize(nc) for nc in found])
    return respond_page(request, found, serialize)


@router.post(
    "/workspaces/{workspace_id}/notification-configurations",
    openapi_extra=integration_bodies.NOTIFICATION_CONFIGURATION,
)
def create_workspace_notification(
    workspace_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    attrs, relationships = _document(body)
    nc = container.notification_configurations.create(principal, WORKSPACE, workspace_id, attrs, relationships)
    return respond(serialize(nc), 201)


@router.get("/teams/{team_id}/notification-configurations")
def list_team_notifications(
    team_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    return respond_page(request, container.notification_configurations.list(principal, TEAM, team_id), serialize)


@router.post(
    "/teams/{team_id}/notification-configurations", openapi_extra=integration_bodies.NOTIFICATION_CONFIGURATION
)
def create_team_notification(
    team_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    attrs, relationships = _document(body)
    nc = container.notification_configurations.create(principal, TEAM, team_id, attrs, relationships)
    return respond(serialize(nc), 201)


@router.get("/projects/{project_id}/notification-configurations")
def list_project_notifications(
    project_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    found = container.notification_configurations.list(principal, PROJECT, project_id)
    return respond_page(request, found, serialize)


@router.post(
    "/projects/{project_id}/notification-configurations", openapi_extra=integration_bodies.NOTIFICATION_CONFIGURATION
)
def create_project_notification(
    project_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    attrs, relationships = _document(body)
    nc = container.notification_configurations.create(principal, PROJECT, project_id, attrs, relationships)
    return respond(serialize(nc), 201)


@router.get("/notification-configurations/{configuration_id}")
def read_notification(configuration_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond(serialize(container.notification_configurations.get(principal, configuration_id)))


@router.patch(
    "/notification-configurations/{configuration_id}",
    openapi_extra=integration_bodies.NOTIFICATION_CONFIGURATION_UPDATE,
)
def update_notification(
    configuration_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    attrs, relationships = _document(body)
    nc = container.notification_configurations.update(principal, configuration_id, attrs, relationships)
    return respond(serialize(nc))


@router.delete("/notification-configurations/{configuration_id}")
def delete_notification(configuration_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.notification_configurations.delete(principal, configuration_id)
    return Response(status_code=204)


@router.post("/notification-configurations/{configuration_id}/actions/verify")
def verify_notification(configuration_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond(serialize(container.notification_configurations.verify(principal, configuration_id)))
