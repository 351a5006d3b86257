"""/api/v2 SSH keys of an organization and the workspace `ssh-key` relationship. A key's value goes in, never out."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from terrace.domain.ssh_keys import SSHKey
from terrace.web import bodies
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import JSONAPIResponse, JSONBody, attributes, read_document, resource, respond, respond_page
from terrace.web.routers.workspaces import serialize as serialize_workspace

router = APIRouter(prefix="/api/v2")


def serialize(key: SSHKey) -> dict[str, Any]:
    return resource("ssh-keys", key.id, {"name": key.name}, links={"self": f"/api/v2/ssh-keys/{key.id}"})


@router.get("/organizations/{org}/ssh-keys")
def list_ssh_keys(org: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond_page(request, container.ssh_keys.list(principal, org), serialize)


@router.post("/organizations/{org}/ssh-keys", openapi_extra=bodies.SSH_KEY)
def create_ssh_key(org: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    data = read_document(body, "ssh-keys")
    return respond(serialize(container.ssh_keys.create(principal, org, attributes(data))), 201)


@router.get("/ssh-keys/{key_id}")
def read_ssh_key(key_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond(serialize(container.ssh_keys.get(principal, key_id)))


@router.patch("/ssh-keys/{key_id}", openapi_extra=bodies.SSH_KEY_UPDATE)
def update_ssh_key(key_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    data = read_document(body, "ssh-keys")
    return respond(serialize(container.ssh_keys.update(principal, key_id, attributes(data))))


@router.delete("/ssh-keys/{key_id}")
def delete_ssh_key(key_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.ssh_keys.delete(principal, key_id)
    return Response(status_code=204)


@router.patch("/workspaces/{workspace_id}/relationships/ssh-key", openapi_extra=bodies.SSH_KEY_ASSIGNMENT)
def assign_ssh_key(
    workspace_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    """go-tfe sends `{data: {type: workspaces, attributes: {id: <key id> | null}}}` (null: unassign)."""
    data = read_document(body, "workspaces")
    ws = container.workspaces.get(principal, workspace_id)
    ws = container.ssh_keys.assign(principal, ws, attributes(data).get("id"))
    return respond(serialize_workspace(container, principal, ws))
