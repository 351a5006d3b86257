"""/api/v2 projects, and team access to workspaces (`team-workspaces`) and projects (`team-projects`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from terrace.bootstrap import Container
from terrace.domain.errors import BadRequest, Invalid
from terrace.domain.projects import Project
from terrace.web import access_serializers, bodies
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.documents import resource_ids
from terrace.web.jsonapi import (
    JSONAPIResponse,
    JSONBody,
    attributes,
    includes,
    paginate,
    read_document,
    relationship_id,
    relationship_list,
    respond,
    respond_page,
    tagged_filters,
)

router = APIRouter(prefix="/api/v2")


def _project(container: Container, project: Project) -> dict[str, Any]:
    return access_serializers.project(project, container.organizations.by_key(project.organization))


def _included(request: Request, projects: list[Project]) -> list[dict[str, Any]]:
    """`include=effective_tag_bindings`: each project's bindings (a project inherits none)."""
    if not {"effective_tag_bindings", "effective-tag-bindings"} & includes(request):
        return []
    return [b for p in projects for b in access_serializers.project_bindings(p, effective=True)]


@router.get("/organizations/{org}/projects")
def list_projects(org: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    names = [n for n in (request.query_params.get("filter[names]") or "").split(",") if n]
    projects = container.projects.list(
        principal, org, names or None, request.query_params.get("q") or None, tagged_filters(request.query_params)
    )
    page, meta, links = paginate(request, projects)
    data = [_project(container, p) for p in page]
    return respond(data, meta=meta, links=links, included=_included(request, page))


@router.post("/organizations/{org}/projects")
def create_project(org: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    data = read_document(body, "projects")
    project = container.projects.create(principal, org, attributes(data), relationship_list(data, "tag-bindings"))
    return respond(_project(container, project), 201)


@router.get("/projects/{project_id}")
def read_project(project_id: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> Any:
    project = container.projects.get(principal, project_id)
    return respond(_project(container, project), included=_included(request, [project]))


@router.patch("/projects/{project_id}")
def update_project(project_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Any:
    data = read_document(body, "projects")
    bindings = relationship_list(data, "tag-bindings")
    project = container.projects.update(principal, project_id, attributes(data), bindings)
    return respond(_project(container, project))


@router.delete("/projects/{project_id}")
def delete_project(project_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.project_deletion.delete(principal, project_id)
    return Response(status_code=204)


@router.get("/projects/{project_id}/tag-bindings")
def list_project_tag_bindings(project_id: str, container: ContainerDep, principal: PrincipalDep) -> Any:
    return respond(access_serializers.project_bindings(container.projects.get(principal, project_id)))


@router.get("/projects/{project_id}/effective-tag-bindings")
def list_project_effective_tag_bindings(project_id: str, container: ContainerDep, principal: PrincipalDep) -> Any:
    project = container.projects.get(principal, project_id)
    return respond(access_serializers.project_bindings(project, effective=True))


@router.patch("/projects/{project_id}/tag-bindings", openapi_extra=bodies.TAG_BINDINGS)
def add_project_tag_bindings(project_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Any:
    if not isinstance(body, dict):
        raise Invalid("request body must be a JSON:API document with a data list", pointer="/data")
    project = container.projects.add_bindings(principal, project_id, body.get("data"))
    return respond(access_serializers.project_bindings(project))


@router.delete("/projects/{project_id}/tag-bindings")
def delete_project_tag_bindings(project_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.projects.delete_bindings(principal, project_id)
    return Response(status_code=204)


@router.post("/projects/{project_id}/relationships/workspaces", openapi_extra=bodies.WORKSPACE_REFS)
def move_workspaces(project_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Response:
    """Move workspaces into the project (every one is checked before any moves)."""
    container.workspaces.move_all(principal, resource_ids(body, "workspaces"), project_id)
    return Response(status_code=204)


# team access -----------------------------------------------------------------------------------
@router.get("/team-workspaces")
def list_team_workspaces(request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    workspace_id = request.query_params.get("filter[workspace][id]")
    if not workspace_id:
        raise BadRequest("filter[workspace][id] is required")
    grants = container.team_access.list_for_workspace(principal, workspace_id)
    return respond_page(request, grants, access_serializers.team_workspace)


@router.get("/team-projects")
def list_team_projects(request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    project_id = request.query_params.get("filter[project][id]")
    if not project_id:
        raise BadRequest("filter[project][id] is required")
    grants = container.team_access.list_for_project(principal, project_id)
    return respond_page(request, grants, access_serializers.team_project)


def _routes(collection: str, kind: str, target: str, serialize: Any) -> None:
    def add(body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
        data = read_document(body, collection)
        team_id = relationship_id(data, "team", "teams")
        target_id = relationship_id(data, kind, target)
        if not target_id or not team_id:
            raise BadRequest(f"relationships.team and relationships.{kind} are required")
        add_grant = container.team_access.add_workspace if kind == "workspace" else container.team_access.add_project
        return respond(serialize(add_grant(principal, team_id, target_id, attributes(data))), 201)

    def read(grant_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
        return respond(serialize(container.team_access.get(principal, grant_id, kind)))

    def update(grant_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
        attrs = attributes(read_document(body, collection))
        return respond(serialize(container.team_access.update(principal, grant_id, kind, attrs)))

    def remove(grant_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
        container.team_access.remove(principal, grant_id, kind)
        return Response(status_code=204)

    router.add_api_route(f"/{collection}", add, methods=["POST"], name=f"add_{kind}_access")
    router.add_api_route(f"/{collection}/{{grant_id}}", read, methods=["GET"], name=f"read_{kind}_access")
    router.add_api_route(f"/{collection}/{{grant_id}}", update, methods=["PATCH"], name=f"update_{kind}_access")
    router.add_api_route(f"/{collection}/{{grant_id}}", remove, methods=["DELETE"], name=f"remove_{kind}_access")


_routes("team-workspaces", "workspace", "workspaces", access_serializers.team_workspace)
_routes("team-projects", "project", "projects", access_serializers.team_project)
