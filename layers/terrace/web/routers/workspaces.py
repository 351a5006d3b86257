"""/api/v2 workspaces: CRUD by name and id, tags, and the lock actions of tfc-api.md §1.4."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from terrace.bootstrap import Container
from terrace.domain import limits
from terrace.domain.errors import Invalid
from terrace.domain.principal import Principal
from terrace.domain.workspace import Workspace
from terrace.web import bodies, serializers
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import JSONAPIResponse, JSONBody, attributes, read_document, respond, respond_page

router = APIRouter(prefix="/api/v2")


def serialize(container: Container, principal: Principal, ws: Workspace) -> dict[str, Any]:
    return serializers.workspace(ws, container.workspaces.permissions(principal, ws))


def _names(items: Any, pointer: str) -> list[str]:
    """Tag names from `[{type: tags, attributes: {name}}]`; anything else is a 422 at `pointer`."""
    if not isinstance(items, list):
        raise Invalid("tags must be a list of {type: tags, attributes: {name}}", pointer=pointer)
    names = []
    for tag in items:
        attrs = tag.get("attributes") if isinstance(tag, dict) else None
        if not isinstance(attrs, dict) or not isinstance(attrs.get("name"), str):
            raise Invalid("each tag needs attributes.name, a string", pointer=pointer)
        names.append(attrs["name"])
    return names


def _tag_names(data: dict[str, Any]) -> list[str]:
    tags = data.get("relationships", {}).get("tags")
    if tags is None:
        return []
    if not isinstance(tags, dict):
        raise Invalid("relationships.tags must be {data: [...]}", pointer="/data/relationships/tags")
    return _names(tags.get("data") or [], "/data/relationships/tags")


@router.get("/organizations/{org}/workspaces")
def list_workspaces(org: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    params = request.query_params
    search = params.get("search[name]") or params.get("search[wildcard-name]", "").strip("*") or None
    tags = [t for t in (params.get("search[tags]") or params.get("filter[tagged][0][key]") or "").split(",") if t]
    workspaces = container.workspaces.list(principal, org, search=search, tags=tags or None)
    return respond_page(request, workspaces, lambda ws: serialize(container, principal, ws))


@router.post("/organizations/{org}/workspaces", openapi_extra=bodies.WORKSPACE)
def create_workspace(org: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    data = read_document(body, "workspaces")
    ws = container.workspaces.create(principal, org, attributes(data), _tag_names(data))
    return respond(serialize(container, principal, ws), 201)


@router.get("/organizations/{org}/workspaces/{name}")
def read_workspace_by_name(org: str, name: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond(serialize(container, principal, container.workspaces.get_by_name(principal, org, name)))


@router.get("/workspaces/{workspace_id}")
def read_workspace(workspace_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond(serialize(container, principal, container.workspaces.get(principal, workspace_id)))


def _update(ws: Workspace, body: Any, container: Container, principal: Principal) -> JSONAPIResponse:
    data = read_document(body, "workspaces")
    attrs = attributes(data)
    if _tag_names(data):
        attrs["tag-names"] = _tag_names(data)
    return respond(serialize(container, principal, container.workspaces.update(principal, ws, attrs)))


@router.patch("/organizations/{org}/workspaces/{name}", openapi_extra=bodies.WORKSPACE)
def update_workspace_by_name(
    org: str, name: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    return _update(container.workspaces.get_by_name(principal, org, name), body, container, principal)


@router.patch("/workspaces/{workspace_id}", openapi_extra=bodies.WORKSPACE)
def update_workspace(
    workspace_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    return _update(container.workspaces.get(principal, workspace_id), body, container, principal)


def _delete(container: Container, principal: Principal, ws: Workspace, *, safe: bool = False) -> None:
    container.runs.end_for_deletion(principal, ws, safe=safe)  # its runs end, and their lock with them
    container.workspaces.delete(principal, container.workspaces.load(ws.id), safe=safe)
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


@router.post("/workspaces/{workspace_id}/relationships/tags", openapi_extra=bodies.TAGS)
def add_tags(workspace_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Response:
    names = _names(body.get("data") if isinstance(body, dict) else None, "/data")
    container.workspaces.add_tags(principal, container.workspaces.get(principal, workspace_id), names)
    return Response(status_code=204)


# locking ---------------------------------------------------------------------------------
@router.post("/workspaces/{workspace_id}/actions/lock", openapi_extra=bodies.LOCK)
def lock(workspace_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    reason: Any = ""
    if isinstance(body, dict):
        data = body["data"] if isinstance(body.get("data"), dict) else {}
        attrs = data["attributes"] if isinstance(data.get("attributes"), dict) else {}
        reason = attrs.get("reason") or body.get("reason") or ""
    reason = limits.text(reason, "reason", limits.LOCK_REASON_MAX)
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
