"""/api/v2 configuration versions and workspace variables (also the legacy `/vars`, by organization and workspace)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse

from terrace.domain.errors import Invalid, NotFound
from terrace.services.access.authz import Action
from terrace.web import bodies
from terrace.web import run_serializers as rser
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import (
    JSONAPIResponse,
    JSONBody,
    attributes,
    includes,
    read_document,
    relationship_id,
    respond,
    respond_page,
)

router = APIRouter(prefix="/api/v2")


@router.post("/workspaces/{workspace_id}/configuration-versions", openapi_extra=bodies.CONFIGURATION_VERSION)
def create_configuration_version(
    workspace_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    ws = container.workspaces.get(principal, workspace_id)
    data = read_document(body, "configuration-versions", required=False)
    cv = container.configuration_versions.create(principal, ws, attributes(data) if data else {})
    return respond(rser.configuration_version(cv, container.configuration_versions.upload_url(cv)), 201)


@router.get("/workspaces/{workspace_id}/configuration-versions")
def list_configuration_versions(
    workspace_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    ws = container.workspaces.get(principal, workspace_id)
    cvs = container.configuration_versions
    return respond_page(request, cvs.list(principal, ws), lambda cv: rser.configuration_version(cv, None))


@router.get("/configuration-versions/{cv_id}")
def read_configuration_version(
    cv_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    # As in HCP Terraform, the upload URL is only given when the version is created.
    cv = container.configuration_versions.get(principal, cv_id)
    ingress = rser.ingress_attributes(cv) if "ingress_attributes" in includes(request) else None
    return respond(rser.configuration_version(cv, None), included=[ingress] if ingress else None)


@router.get("/configuration-versions/{cv_id}/ingress-attributes")
def read_ingress_attributes(cv_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    """What a version made from a forge's commit was made of; 404 for an uploaded one."""
    ingress = rser.ingress_attributes(container.configuration_versions.get(principal, cv_id))
    if ingress is None:
        raise NotFound(f"configuration version {cv_id} has no ingress attributes")
    return respond(ingress)


@router.post("/configuration-versions/{cv_id}/actions/archive", openapi_extra=bodies.RUN_ACTION)
def archive_configuration_version(
    cv_id: str, _body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> Response:
    container.configuration_backing_data.archive(principal, cv_id)
    return Response(status_code=202)


@router.post("/configuration-versions/{cv_id}/actions/{action}", openapi_extra=bodies.RUN_ACTION)
def manage_backing_data(
    cv_id: str, action: str, _body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> Response:
    """Terraform Enterprise's backing-data actions: soft delete, restore, permanently delete."""
    cvs = container.configuration_backing_data
    actions = {
        "soft_delete_backing_data": cvs.soft_delete_backing_data,
        "restore_backing_data": cvs.restore_backing_data,
        "permanently_delete_backing_data": cvs.permanently_delete_backing_data,
    }
    if action not in actions:
        raise NotFound(f"no action {action} on configuration versions")
    actions[action](principal, cv_id)
    return Response(status_code=204)


@router.get("/configuration-versions/{cv_id}/download")
def download_configuration_version(cv_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    cv = container.configuration_versions.get(principal, cv_id, Action.DOWNLOAD_CONFIGURATION)
    return RedirectResponse(container.configuration_versions.download_url(cv), status_code=302)


# variables -------------------------------------------------------------------------------
@router.get("/workspaces/{workspace_id}/vars")
def list_variables(
    workspace_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    ws = container.workspaces.get(principal, workspace_id)
    return respond_page(request, container.variables.list(principal, ws), rser.variable)


@router.post("/workspaces/{workspace_id}/vars", openapi_extra=bodies.VARIABLE)
def create_variable(
    workspace_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    ws = container.workspaces.get(principal, workspace_id)
    data = read_document(body, "vars")
    return respond(rser.variable(container.variables.create(principal, ws, attributes(data))), 201)


@router.get("/workspaces/{workspace_id}/vars/{var_id}")
def read_variable(workspace_id: str, var_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    ws = container.workspaces.get(principal, workspace_id)
    return respond(rser.variable(container.variables.get(principal, ws, var_id)))


@router.patch("/workspaces/{workspace_id}/vars/{var_id}", openapi_extra=bodies.VARIABLE)
def update_variable(
    workspace_id: str, var_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    ws = container.workspaces.get(principal, workspace_id)
    data = read_document(body, "vars")
    return respond(rser.variable(container.variables.update(principal, ws, var_id, attributes(data))))


@router.delete("/workspaces/{workspace_id}/vars/{var_id}")
def delete_variable(workspace_id: str, var_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    ws = container.workspaces.get(principal, workspace_id)
    container.variables.delete(principal, ws, var_id)
    return Response(status_code=204)


# the legacy variables API (`/vars`: a workspace's variables named by organization and workspace name)
@router.get("/vars")
def list_variables_legacy(request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    q = request.query_params
    org, name = q.get("filter[organization][name]"), q.get("filter[workspace][name]")
    if not org or not name:
        raise Invalid("filter[organization][name] and filter[workspace][name] are required", pointer="/filter")
    ws = container.workspaces.get_by_name(principal, org, name)
    return respond_page(request, container.variables.list(principal, ws), rser.variable)


@router.post("/vars", openapi_extra=bodies.VARIABLE)
def create_variable_legacy(body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    data = read_document(body, "vars")
    workspace_id = relationship_id(data, "workspace")
    if not workspace_id:
        raise Invalid("relationships.workspace is required", pointer="/data/relationships/workspace")
    ws = container.workspaces.get(principal, workspace_id)
    return respond(rser.variable(container.variables.create(principal, ws, attributes(data))), 201)


@router.patch("/vars/{var_id}", openapi_extra=bodies.VARIABLE)
def update_variable_legacy(var_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Any:
    data = read_document(body, "vars")
    ws = container.variables.workspace_of(principal, var_id)
    return respond(rser.variable(container.variables.update(principal, ws, var_id, attributes(data))))


@router.delete("/vars/{var_id}")
def delete_variable_legacy(var_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.variables.delete(principal, container.variables.workspace_of(principal, var_id), var_id)
    return Response(status_code=204)
