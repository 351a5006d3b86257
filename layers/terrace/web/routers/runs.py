"""/api/v2 runs: create, read, lists, actions, the organization queue and capacity, run events."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from terrace.bootstrap import Container
from terrace.domain import runs as rs
from terrace.domain.errors import Invalid
from terrace.domain.principal import Principal
from terrace.domain.runs import Run
from terrace.services.access.authz import Action
from terrace.web import bodies
from terrace.web import run_serializers as rser
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import (
    JSONAPIResponse,
    JSONBody,
    attributes,
    paginate,
    read_document,
    relationship_id,
    resource,
    respond,
    respond_page,
)

router = APIRouter(prefix="/api/v2")


def serialize(container: Container, principal: Principal, run: Run) -> dict[str, Any]:
    return serialize_many(container, principal, [run])[0]


def serialize_many(container: Container, principal: Principal, runs: list[Run]) -> list[dict[str, Any]]:
    """Runs as resources; positions and permissions are worked out once for the whole list."""
    positions = container.runs.queue_positions(runs)
    permissions: dict[str, dict[str, bool]] = {}
    for run in runs:
        if run.workspace_id not in permissions:
            ws = container.workspaces.load(run.workspace_id)
            permissions[ws.id] = container.workspaces.permissions(principal, ws)
    cooloff = container.settings.force_cancel_cooloff_s
    return [
        rser.run(run, position=positions[run.id], permissions=permissions[run.workspace_id], cooloff_s=cooloff)
        for run in runs
    ]


def respond_runs(request: Request, container: Container, principal: Principal, runs: list[Run]) -> JSONAPIResponse:
    page, meta, links = paginate(request, runs)
    return respond(serialize_many(container, principal, page), meta=meta, links=links)


@router.post("/runs", openapi_extra=bodies.RUN)
def create_run(body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    data = read_document(body, "runs")
    workspace_id = relationship_id(data, "workspace", "workspaces")
    if not workspace_id:
        raise Invalid("relationships.workspace is required", pointer="/data/relationships/workspace")
    ws = container.workspaces.get(principal, workspace_id)
    cv_id = relationship_id(data, "configuration-version", "configuration-versions")
    run = container.runs.create(principal, ws, attributes(data), cv_id)
    return respond(serialize(container, principal, run), 201)


@router.get("/runs/{run_id}")
def read_run(run_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond(serialize(container, principal, container.runs.get(principal, run_id)))


@router.get("/workspaces/{workspace_id}/runs")
def list_runs(workspace_id: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    ws = container.workspaces.get(principal, workspace_id)
    runs = container.runs.list(principal, ws)
    statuses = [s for s in (request.query_params.get("filter[status]") or "").split(",") if s]
    if statuses:
        runs = [r for r in runs if r.status in statuses]
    return respond_runs(request, container, principal, runs)


@router.get("/organizations/{org}/runs/queue")
def organization_queue(org: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    organization = container.organizations.get(principal, org)
    allowed = container.authz.can(principal, Action.READ_WORKSPACE, organization.view)
    runs = container.runs.organization_queue(organization.name) if allowed else []
    return respond_runs(request, container, principal, runs)


@router.get("/organizations/{org}/capacity")
def capacity(org: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    organization = container.organizations.get(principal, org)
    runs = container.runs.organization_queue(organization.name)
    return respond(
        resource(
            "organization-capacity",
            organization.name,
            {
                "pending": len([r for r in runs if r.status in rs.QUEUED]),
                "running": len([r for r in runs if r.status in rs.RUNNING]),
            },
        )
    )


@router.get("/runs/{run_id}/run-events")
def run_events(run_id: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    run = container.runs.get(principal, run_id)
    events = container.run_store.events(run.id)
    return respond_page(
        request,
        events,
        lambda e: resource(
            "run-events",
            e["id"],
            {
                "action": e["action"],
                "created-at": e["created_at"],
                "description": e["description"],
            },
            {"actor": {"data": None}, "target": {"data": {"type": "runs", "id": run.id}}},
        ),
    )


# Clients send {}, {"comment": …} or a JSON:API-ish body: any JSON (or none) is accepted and ignored.
@router.post("/runs/{run_id}/actions/apply", openapi_extra=bodies.RUN_ACTION)
def apply_run(run_id: str, _body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.runs.apply(principal, run_id)
    return Response(status_code=202)


@router.post("/runs/{run_id}/actions/discard", openapi_extra=bodies.RUN_ACTION)
def discard_run(run_id: str, _body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.runs.discard(principal, run_id)
    return Response(status_code=202)


@router.post("/runs/{run_id}/actions/cancel", openapi_extra=bodies.RUN_ACTION)
def cancel_run(run_id: str, _body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.runs.cancel(principal, run_id)
    return Response(status_code=202)


@router.post("/runs/{run_id}/actions/force-cancel", openapi_extra=bodies.RUN_ACTION)
def force_cancel_run(run_id: str, _body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.runs.force_cancel(principal, run_id)
    return Response(status_code=202)
