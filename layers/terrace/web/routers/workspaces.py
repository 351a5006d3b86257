"""/api/v2 workspaces: CRUD by name and id (with `include=`), and the lock actions of tfc-api.md §1.4.
Tags, tag bindings and remote state consumers are in `workspace_relations.py`."""

from __future__ import annotations

from contextlib import suppress
from typing import Any

from fastapi import APIRouter, Request, Response

from terrace.bootstrap import Container
from terrace.domain import limits, tool_versions
from terrace.domain.errors import Forbidden, Invalid, NotFound
from terrace.domain.principal import Principal
from terrace.domain.projects import Project, default_project_id
from terrace.domain.workspace import Workspace
from terrace.services.workspaces.attributes import tag_bindings
from terrace.web import bodies, serializers
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import (
    JSONAPIResponse,
    JSONBody,
    attributes,
    paginate,
    read_document,
    relationship_id,
    relationship_list,
    respond,
    tagged_filters,
)
from terrace.web.workspace_includes import by_current_run_created_at, included, requested

router = APIRouter(prefix="/api/v2")


def serialize(
    container: Container, principal: Principal, ws: Workspace, project: Project | None = None
) -> dict[str, Any]:
    """`project`: the workspace's, when the caller read it already (a list reads its organization's at once)."""
    org = container.workspaces.organization_of(ws)
    project = project or container.workspaces.defaults_from(ws)
    permissions = container.workspaces.permissions(principal, ws)
    return serializers.workspace(ws, permissions, org, project, container.workspaces.tool_of(ws))


def _respond(
    request: Request, container: Container, principal: Principal, ws: Workspace, status_code: int = 200
) -> JSONAPIResponse:
    data = serialize(container, principal, ws)
    with suppress(Forbidden, NotFound):  # one workspace's document names its variables (go-tfe's `Variables`)
        variables = container.variables.list(principal, ws)
        data["relationships"]["vars"] = {"data": [{"type": "vars", "id": v.id} for v in variables]}
    extra = included(container, principal, [ws], [data], requested(request))
    return respond(data, status_code, included=extra)


def _project_id(data: dict[str, Any]) -> str | None:
    """The project a create or update names (`relationships.project`); the workspace service checks it."""
    return relationship_id(data, "project", "projects")


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
    tags = relationship_list(data, "tags")
    return _names(tags, "/data/relationships/tags") if tags else []


_SORT_KEYS = {
    "name": lambda ws: (ws.name,),
    "latest-change-at": lambda ws: (ws.updated_at, ws.id),
    "created-at": lambda ws: (ws.created_at, ws.created_ns, ws.id),
}


def _sorted(workspaces: list[Workspace], sort: str) -> list[Workspace]:
    """TFC's `sort` (name, latest-change-at; a leading - reverses); without one (or with one Terrace does not
    know), the order they were created in: TFC only promises a stable default, go-tfe's tests expect this one."""
    key = _SORT_KEYS.get(sort.removeprefix("-"))
    return sorted(workspaces, key=key or _SORT_KEYS["created-at"], reverse=key is not None and sort.startswith("-"))


@router.get("/organizations/{org}/workspaces")
def list_workspaces(org: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    params = request.query_params
    search = params.get("search[name]") or params.get("search[wildcard-name]", "").strip("*") or None
    tags = [t.strip() for t in (params.get("search[tags]") or "").split(",") if t.strip()]
    exclude = [t.strip() for t in (params.get("search[exclude-tags]") or "").split(",") if t.strip()]
    workspaces = container.workspaces.list(
        principal, org, search=search, tags=tags, exclude_tags=exclude, bindings=tagged_filters(params)
    )
    project = params.get("filter[project][id]")
    if project:
        workspaces = [ws for ws in workspaces if (ws.project_id or default_project_id(ws.organization)) == project]
    sort = params.get("sort") or ""
    if sort.removeprefix("-") == "current-run.created-at":
        workspaces = by_current_run_created_at(container, principal, workspaces, sort.startswith("-"))
    else:
        workspaces = _sorted(workspaces, sort)
    page, meta, links = paginate(request, workspaces)
    projects = container.workspaces.projects_in(page[0].organization) if page else {}
    data = [serialize(container, principal, ws, projects.get(container.workspaces.project_of(ws))) for ws in page]
    extra = included(container, principal, page, data, requested(request))
    return respond(data, meta=meta, links=links, included=extra)


@router.post("/organizations/{org}/workspaces", openapi_extra=bodies.WORKSPACE)
def create_workspace(
    org: str, request: Request, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    data = read_document(body, "workspaces")
    bindings = relationship_list(data, "tag-bindings")
    project_id = _project_id(data)
    ws = container.workspaces.create(
        principal,
        org,
        attributes(data),
        _tag_names(data),
        tag_bindings(bindings) if bindings else (),
        project_id=project_id,
        client=tool_versions.client_tool(request.headers.get("user-agent"), request.headers.get("terraform-version")),
    )
    return _respond(request, container, principal, ws, 201)


@router.get("/organizations/{org}/workspaces/{name}")
def read_workspace_by_name(
    org: str, name: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    return _respond(request, container, principal, container.workspaces.open_by_name(principal, org, name))


@router.get("/workspaces/{workspace_id}")
def read_workspace(
    workspace_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    return _respond(request, container, principal, container.workspaces.get(principal, workspace_id))


def _update(request: Request, ws: Workspace, body: Any, container: Container, principal: Principal) -> JSONAPIResponse:
    data = read_document(body, "workspaces")
    attrs = attributes(data)
    if _tag_names(data):
        attrs["tag-names"] = _tag_names(data)
    bindings = relationship_list(data, "tag-bindings")
    if bindings is not None:
        attrs["tag-bindings"] = bindings
    project_id = _project_id(data)
    if project_id and project_id != (ws.project_id or default_project_id(ws.organization)):
        ws = container.workspaces.move(principal, ws, project_id)
    return _respond(request, container, principal, container.workspaces.update(principal, ws, attrs))


@router.patch("/organizations/{org}/workspaces/{name}", openapi_extra=bodies.WORKSPACE)
def update_workspace_by_name(
    org: str, name: str, request: Request, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    return _update(request, container.workspaces.get_by_name(principal, org, name), body, container, principal)


@router.patch("/workspaces/{workspace_id}", openapi_extra=bodies.WORKSPACE)
def update_workspace(
    workspace_id: str, request: Request, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    return _update(request, container.workspaces.get(principal, workspace_id), body, container, principal)


@router.delete("/organizations/{org}/workspaces/{name}")
def delete_workspace_by_name(org: str, name: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.workspace_deletion.delete_by_name(principal, org, name)
    return Response(status_code=204)


@router.delete("/workspaces/{workspace_id}")
def delete_workspace(workspace_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.workspace_deletion.delete_by_id(principal, workspace_id)
    return Response(status_code=204)


@router.post("/organizations/{org}/workspaces/{name}/actions/safe-delete")
def safe_delete_by_name(org: str, name: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.workspace_deletion.delete_by_name(principal, org, name, safe=True)
    return Response(status_code=204)


@router.post("/workspaces/{workspace_id}/actions/safe-delete")
def safe_delete(workspace_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.workspace_deletion.delete_by_id(principal, workspace_id, safe=True)
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
