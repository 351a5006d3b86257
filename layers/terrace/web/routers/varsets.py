"""/api/v2 variable sets (`varsets`): an organization's sets, their variables, the workspaces and projects they
apply to, the sets of a workspace or project, and a workspace's effective variables (`all-vars`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from terrace.domain.errors import Invalid
from terrace.web import bodies
from terrace.web import varset_serializers as ser
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import JSONAPIResponse, JSONBody, attributes, includes, paginate, read_document, respond

router = APIRouter(prefix="/api/v2")


def _page(request: Request, views: list[Any]) -> JSONAPIResponse:
    page, meta, links = paginate(request, views)
    return respond([ser.varset(v) for v in page], meta=meta, links=links, included=ser.included(page))


def _query(request: Request) -> str | None:
    return request.query_params.get("q") or request.query_params.get("filter[name]") or None


def _related(data: dict[str, Any], name: str, type_: str) -> list[Any] | None:
    """A to-many relationship's `data` list of a request document (None when the relationship is absent)."""
    rel = (data.get("relationships") or {}).get(name)
    if rel is None:
        return None
    items = rel.get("data") if isinstance(rel, dict) else None
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise Invalid(f"relationship {name} must be {{data: [{{type: {type_}, ...}}]}}",
                      pointer=f"/data/relationships/{name}")  # fmt: skip
    return items


def _related_ids(data: dict[str, Any], name: str, type_: str) -> list[str] | None:
    items = _related(data, name, type_)
    if items is None:
        return None
    if not all(isinstance(i.get("id"), str) and i.get("type") in (type_, None) for i in items):
        raise Invalid(f"each of {name} is {{type: {type_}, id}}", pointer=f"/data/relationships/{name}")
    return [i["id"] for i in items]


def _ids(body: Any, type_: str) -> list[str]:
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list) or not data:
        raise Invalid(f"request body must be {{data: [{{type: {type_}, id}}, ...]}}", pointer="/data")
    if not all(isinstance(i, dict) and isinstance(i.get("id"), str) and i.get("type") in (type_, None) for i in data):
        raise Invalid(f"each entry is {{type: {type_}, id}}", pointer="/data")
    return [i["id"] for i in data]


# sets ----------------------------------------------------------------------------------------------
@router.get("/organizations/{org}/varsets")
def list_varsets(org: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return _page(request, container.varset_views.of_organization(principal, org, _query(request), includes(request)))


@router.post("/organizations/{org}/varsets", openapi_extra=bodies.VARSET)
def create_varset(org: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    data = read_document(body, "varsets")
    variables = [attributes(v) for v in _related(data, "vars", "vars") or []]
    vs = container.set_variables.create_set(
        principal,
        org,
        attributes(data),
        _related_ids(data, "workspaces", "workspaces") or [],
        _related_ids(data, "projects", "projects") or [],
        variables,
    )
    return respond(ser.varset(container.varset_views.present(vs)), 201)


@router.get("/varsets/{varset_id}")
def read_varset(varset_id: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> Any:
    view = container.varset_views.get(principal, varset_id, includes(request))
    return respond(ser.varset(view), included=ser.included([view]))


@router.patch("/varsets/{varset_id}", openapi_extra=bodies.VARSET)
def update_varset(
    varset_id: str, request: Request, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    data = read_document(body, "varsets")
    vs = container.varsets.update(
        principal, varset_id, attributes(data), _related_ids(data, "workspaces", "workspaces")
    )
    view = container.varset_views.present(vs, includes(request))
    return respond(ser.varset(view), included=ser.included([view]))


@router.delete("/varsets/{varset_id}")
def delete_varset(varset_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.varsets.delete(principal, varset_id)
    return Response(status_code=204)


# where a set applies --------------------------------------------------------------------------------
def _apply(varset_id: str, body: Any, container: Any, principal: Any, kind: str, add: bool) -> Response:
    container.varsets.apply(principal, varset_id, kind, _ids(body, kind), add=add)
    return Response(status_code=204)


@router.post("/varsets/{varset_id}/relationships/workspaces", openapi_extra=bodies.WORKSPACE_REFS)
def apply_to_workspaces(varset_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Response:
    return _apply(varset_id, body, container, principal, "workspaces", True)


@router.delete("/varsets/{varset_id}/relationships/workspaces", openapi_extra=bodies.WORKSPACE_REFS)
def remove_from_workspaces(
    varset_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> Response:
    return _apply(varset_id, body, container, principal, "workspaces", False)


@router.post("/varsets/{varset_id}/relationships/projects", openapi_extra=bodies.PROJECT_REFS)
def apply_to_projects(varset_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Response:
    return _apply(varset_id, body, container, principal, "projects", True)


@router.delete("/varsets/{varset_id}/relationships/projects", openapi_extra=bodies.PROJECT_REFS)
def remove_from_projects(varset_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Response:
    return _apply(varset_id, body, container, principal, "projects", False)


@router.get("/workspaces/{workspace_id}/varsets")
def list_workspace_varsets(
    workspace_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    views = container.varset_views.of_workspace(principal, workspace_id, _query(request), includes(request))
    return _page(request, views)


@router.get("/projects/{project_id}/varsets")
def list_project_varsets(
    project_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    views = container.varset_views.of_project(principal, project_id, _query(request), includes(request))
    return _page(request, views)


@router.get("/workspaces/{workspace_id}/all-vars")
def list_all_variables(
    workspace_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    ws = container.workspaces.get(principal, workspace_id)
    found = container.effective_variables.all_vars(principal, ws)
    page, meta, links = paginate(request, found)
    return respond([ser.effective_variable(v, ws.id) for v in page], meta=meta, links=links)


# variables of a set ------------------------------------------------------------------------------
@router.get("/varsets/{varset_id}/relationships/vars")
def list_set_variables(
    varset_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    page, meta, links = paginate(request, container.set_variables.list(principal, varset_id))
    return respond([ser.set_variable(v) for v in page], meta=meta, links=links)


@router.post("/varsets/{varset_id}/relationships/vars", openapi_extra=bodies.VARIABLE)
def create_set_variable(
    varset_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    attrs = attributes(read_document(body, "vars"))
    return respond(ser.set_variable(container.set_variables.create(principal, varset_id, attrs)), 201)


@router.get("/varsets/{varset_id}/relationships/vars/{var_id}")
def read_set_variable(varset_id: str, var_id: str, container: ContainerDep, principal: PrincipalDep) -> Any:
    return respond(ser.set_variable(container.set_variables.get(principal, varset_id, var_id)))


@router.patch("/varsets/{varset_id}/relationships/vars/{var_id}", openapi_extra=bodies.VARIABLE)
def update_set_variable(
    varset_id: str, var_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    attrs = attributes(read_document(body, "vars"))
    return respond(ser.set_variable(container.set_variables.update(principal, varset_id, var_id, attrs)))


@router.delete("/varsets/{varset_id}/relationships/vars/{var_id}")
def delete_set_variable(varset_id: str, var_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.set_variables.delete(principal, varset_id, var_id)
    return Response(status_code=204)
