"""/api/v2 projects, and team access to workspaces (`team-workspaces`) and projects (`team-projects`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from terrace.bootstrap import Container
from terrace.domain.errors import BadRequest
from terrace.domain.projects import Project
from terrace.web import access_serializers
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import (
    JSONAPIResponse,
    JSONBody,
    attributes,
    read_document,
    relationship_id,
    respond,
    respond_page,
)

router = APIRouter(prefix="/api/v2")


def _project(container: Container, project: Project) -> dict[str, Any]:
    return access_serializers.project(project, container.organizations.name_of(project.organization))


@router.get("/organizations/{org}/projects")
def list_projects(org: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    names = [n for n in (request.query_params.get("filter[names]") or "").split(",") if n]
    projects = container.projects.list(principal, org, names or None, request.query_params.get("q") or None)
    return respond_page(request, projects, lambda p: _project(container, p))


@router.post("/organizations/{org}/projects")
def create_project(org: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    project = container.projects.create(principal, org, attributes(read_document(body, "projects")))
    return respond(_project(container, project), 201)


@router.get("/projects/{project_id}")
def read_project(project_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond(_project(container, container.projects.get(principal, project_id)))


@router.patch("/projects/{project_id}")
def update_project(project_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Any:
    project = container.projects.update(principal, project_id, attributes(read_document(body, "projects")))
    return respond(_project(container, project))


@router.delete("/projects/{project_id}")
def delete_project(project_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.project_deletion.delete(principal, project_id)
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
