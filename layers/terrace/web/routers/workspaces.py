"""/api/v2 workspaces: CRUD by name and id, tags, and the lock actions of tfc-api.md §1.4."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from terrace.bootstrap import Container
from terrace.domain.errors import Invalid
from terrace.domain.principal import Principal
from terrace.domain.workspace import Workspace
from terrace.web import serializers
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import JSONAPIResponse, attributes, read_document, read_json, respond, respond_page

router = APIRouter(prefix="/api/v2")


def serialize(container: Container, principal: Principal, ws: Workspace) -> dict[str, Any]:
    return serializers.workspace(ws, container.workspaces.permissions(principal, ws))


def _tag_names(data: dict[str, Any]) -> list[str]:
    tags = ((data.get("relationships") or {}).get("tags") or {}).get("data") or []
    if not isinstance(tags, list):
        raise Invalid("relationships.tags.data must be a list", pointer="/data/relationships/tags")
    return [str((t.get("attributes") or {}).get("name")) for t in tags if isinstance(t, dict)]


@router.get("/organizations/{org}/workspaces")
def list_workspaces(org: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    params = request.query_params
    search = params.get("search[name]") or params.get("search[wildcard-name]", "").strip("*") or None
    tags = [t for t in (params.get("search[tags]") or params.get("filter[tagged][0][key]") or "").split(",") if t]
    workspaces = container.workspaces.list(principal, org, search=search, tags=tags or None)
    return respond_page(request, workspaces, lambda ws: serialize(container, principal, ws))


@router.post("/organizations/{org}/workspaces")
async def create_workspace(
    org: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    data = await read_document(request, "workspaces")
    ws = container.workspaces.create(principal, org, attributes(data), _tag_names(data))
    return respond(serialize(container, principal, ws), 201)


@router.get("/organizations/{org}/workspaces/{name}")
def read_workspace_by_name(org: str, name: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond(serialize(container, principal, container.workspaces.get_by_name(principal, org, name)))


@router.get("/workspaces/{workspace_id}")
def read_workspace(workspace_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond(serialize(container, principal, container.workspaces.get(principal, workspace_id)))


async def _update(ws: Workspace, request: Request, container: Container, principal: Principal) -> JSONAPIResponse:
    data = await read_document(request, "workspaces")
    attrs = attributes(data)
    if _tag_names(data):
        attrs["tag-names"] = _tag_names(data)
    return respond(serialize(container, principal, container.workspaces.update(principal, ws, attrs)))


@router.patch("/organizations/{org}/workspaces/{name}")
async def update_workspace_by_name(
    org: str, name: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    return await _update(container.workspaces.get_by_name(principal, org, name), request, container, principal)


@router.patch("/workspaces/{workspace_id}")
async def update_workspace(
    workspace_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    return await _update(container.workspaces.get(principal, workspace_id), request, container, principal)


def _delete(container: Container, principal: Principal, ws: Workspace, *, safe: bool = False) -> None:
    container.workspaces.delete(principal, ws, safe=safe)
    container.state_versions.purge(ws.id)


@router.delete("/organizations/{org}/workspaces/{name}")
def delete_workspace_by_name(org: str, name: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    _delete(container, principal, container.workspaces.get_by_name(principal, org, name))
    return Response(status_code=204)


@router.delete("/workspaces/{workspace_id}")
def delete_workspace(workspace_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    _delete(container, principal, container.workspaces.get(principal, workspace_id))
    return Response(status_code=204)


@router.post("/organizations/{org}/workspaces/{name}/actions/safe-delete")
def safe_delete_by_name(org: str, name: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    _delete(container, principal, container.workspaces.get_by_name(principal, org, name), safe=True)
    return Response(status_code=204)


@router.post("/workspaces/{workspace_id}/actions/safe-delete")
def safe_delete(workspace_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    _delete(container, principal, container.workspaces.get(principal, workspace_id), safe=True)
    return Response(status_code=204)


@router.post("/workspaces/{workspace_id}/relationships/tags")
async def add_tags(workspace_id: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> Response:
    body = await read_json(request)
    items = body.get("data") if isinstance(body, dict) else None
    if not isinstance(items, list):
        raise Invalid("body must be {data: [{type: tags, attributes: {name}}]}", pointer="/data")
    names = [str((t.get("attributes") or {}).get("name")) for t in items if isinstance(t, dict)]
    container.workspaces.add_tags(principal, container.workspaces.get(principal, workspace_id), names)
    return Response(status_code=204)


# locking ---------------------------------------------------------------------------------
@router.post("/workspaces/{workspace_id}/actions/lock")
async def lock(
    workspace_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    body = await read_json(request)
    reason = ""
    if isinstance(body, dict):
        reason = str(((body.get("data") or {}).get("attributes") or {}).get("reason") or body.get("reason") or "")
    ws = container.locks.lock(principal, container.workspaces.get(principal, workspace_id), reason)
    return respond(serialize(container, principal, ws))


@router.post("/workspaces/{workspace_id}/actions/unlock")
def unlock(workspace_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    ws = container.locks.unlock(principal, container.workspaces.get(principal, workspace_id))
    return respond(serialize(container, principal, ws))


@router.post("/workspaces/{workspace_id}/actions/force-unlock")
def force_unlock(workspace_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    ws = container.locks.force_unlock(principal, container.workspaces.get(principal, workspace_id))
    return respond(serialize(container, principal, ws))
