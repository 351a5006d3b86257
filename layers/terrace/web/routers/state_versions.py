"""/api/v2 state versions and their outputs (tfc-api.md §1.5, §1.6, §4.2, §4.3)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse

from terrace.bootstrap import Container
from terrace.domain.errors import Invalid, NotFound
from terrace.domain.principal import Principal
from terrace.domain.state_versions import StateVersion
from terrace.services.state.backing_data import TRANSITIONS
from terrace.web import bodies, resource_documents, state_serializers
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import (
    JSONAPIResponse,
    JSONBody,
    attributes,
    includes,
    paginate,
    read_document,
    relationship_id,
    respond,
    respond_page,
)

router = APIRouter(prefix="/api/v2")


serialize = resource_documents.state_version


def respond_versions(
    request: Request, container: Container, principal: Principal, versions: list[StateVersion] | StateVersion
) -> JSONAPIResponse:
    """One state version or a page of them, with `included` outputs when `include=outputs` asks for them."""
    meta: dict[str, Any] | None = None
    links: dict[str, Any] | None = None
    if isinstance(versions, StateVersion):
        page = [versions]
    else:
        page, meta, links = paginate(request, versions)
    included = []
    if "outputs" in includes(request):
        for sv in page:
            found, reveal = container.state_versions.outputs(principal, sv.id)
            included += [state_serializers.output(out, reveal=reveal) for out in found]
    serialized = [serialize(container, sv) for sv in page]
    data = serialized[0] if isinstance(versions, StateVersion) else serialized
    return respond(data, meta=meta, links=links, included=included)


@router.post("/workspaces/{workspace_id}/state-versions", openapi_extra=bodies.STATE_VERSION)
def create_state_version(
    workspace_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    data = read_document(body, "state-versions")
    run_id = relationship_id(data, "run", "runs")
    sv = container.state_versions.create(principal, workspace_id, attributes(data), run_id)
    return respond(serialize(container, sv, created=True), 201)


@router.patch("/workspaces/{workspace_id}/state-versions", openapi_extra=bodies.ROLLBACK)
def rollback_state_version(
    workspace_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    data = read_document(body, "state-versions")
    target = relationship_id(data, "rollback-state-version", "state-versions")
    if target is None:
        raise Invalid(
            "relationships.rollback-state-version is required", pointer="/data/relationships/rollback-state-version"
        )
    sv = container.state_versions.rollback(principal, workspace_id, target)
    return respond(serialize(container, sv), 201)


@router.get("/workspaces/{workspace_id}/state-versions")
def list_workspace_state_versions(
    workspace_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    ws = container.workspaces.get(principal, workspace_id)
    found = container.state_versions.list_for(principal, ws, request.query_params.get("filter[status]"))
    return respond_versions(request, container, principal, found)


@router.get("/state-versions")
def list_state_versions(request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    params = request.query_params
    org, name = params.get("filter[organization][name]"), params.get("filter[workspace][name]")
    if not org or not name:
        raise Invalid("filter[organization][name] and filter[workspace][name] are required")
    ws = container.workspaces.get_by_name(principal, org, name)
    found = container.state_versions.list_for(principal, ws, params.get("filter[status]"))
    return respond_versions(request, container, principal, found)


@router.get("/state-versions/{sv_id}")
def read_state_version(
    sv_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    return respond_versions(request, container, principal, container.state_versions.get(principal, sv_id))


@router.get("/workspaces/{workspace_id}/current-state-version")
def current_state_version(
    workspace_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    return respond_versions(request, container, principal, container.state_versions.current(principal, workspace_id))


@router.get("/state-versions/{sv_id}/download")
def download_state(sv_id: str, container: ContainerDep, principal: PrincipalDep) -> RedirectResponse:
    return RedirectResponse(container.state_versions.download_url(principal, sv_id), status_code=302)


@router.get("/state-versions/{sv_id}/sanitized-download")
def download_sanitized_state(sv_id: str, container: ContainerDep, principal: PrincipalDep) -> RedirectResponse:
    """A Hold Your Own Key state version's copy with its sensitive values redacted."""
    return RedirectResponse(container.state_versions.sanitized_download_url(principal, sv_id), status_code=302)


@router.get("/state-versions/{sv_id}/json-download")
def download_json_state(sv_id: str, container: ContainerDep, principal: PrincipalDep) -> RedirectResponse:
    return RedirectResponse(container.state_versions.download_url(principal, sv_id, json_state=True), status_code=302)


@router.get("/state-versions/{sv_id}/outputs")
def list_outputs(sv_id: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    found, reveal = container.state_versions.outputs(principal, sv_id)
    return respond_page(request, found, lambda out: state_serializers.output(out, reveal=reveal))


@router.get("/workspaces/{workspace_id}/current-state-version-outputs")
def current_outputs(
    workspace_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    found = container.state_versions.current_outputs(principal, workspace_id)
    return respond_page(request, found, lambda out: state_serializers.output(out, reveal=False))


@router.get("/state-version-outputs/{wos_id}")
def read_output(wos_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    out, reveal = container.state_versions.output(principal, wos_id)
    return respond(state_serializers.output(out, reveal=reveal))


@router.post("/state-versions/{sv_id}/actions/{action}_backing_data")
def manage_backing_data(sv_id: str, action: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    """TFE's soft_delete_backing_data, restore_backing_data and permanently_delete_backing_data."""
    if action not in TRANSITIONS:
        raise NotFound(f"no action {action}_backing_data")
    container.state_backing_data.change(principal, sv_id, action)
    return Response(status_code=204)
