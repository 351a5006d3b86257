"""/api/v2 run triggers (`services/workspaces/run_triggers.py`), in go-tfe's `run_trigger.go` shape: attributes
`created-at`, `sourceable-name`, `workspace-name`; relationships `sourceable` and `workspace` (both workspaces),
`include=sourceable,workspace`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Request, Response

from terrace.domain.run_triggers import RunTriggerView
from terrace.domain.workspace import Workspace
from terrace.web import bodies
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import (
    JSONAPIResponse,
    JSONBody,
    includes,
    paginate,
    read_document,
    ref,
    relationship_id,
    resource,
    respond,
)
from terrace.web.routers.workspaces import serialize as serialize_workspace

router = APIRouter(prefix="/api/v2")


def serialize(view: RunTriggerView) -> dict[str, Any]:
    t = view.trigger
    return resource(
        "run-triggers",
        t.id,
        {"created-at": t.created_at, "sourceable-name": view.sourceable.name, "workspace-name": view.workspace.name},
        {"sourceable": ref("workspaces", t.sourceable_id), "workspace": ref("workspaces", t.workspace_id)},
        links={"self": f"/api/v2/run-triggers/{t.id}"},
    )


def _included(views: list[RunTriggerView], wanted: frozenset[str], serialize_ws: Callable[[Workspace], Any]) -> Any:
    """`include=sourceable,workspace`: each workspace once."""
    found: dict[str, Workspace] = {}
    for view in views:
        for name, ws in (("sourceable", view.sourceable), ("workspace", view.workspace)):
            if name in wanted:
                found.setdefault(ws.id, ws)
    return [serialize_ws(ws) for ws in found.values()]


@router.get("/workspaces/{workspace_id}/run-triggers")
def list_run_triggers(
    workspace_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    kind = request.query_params.get("filter[run-trigger][type]")
    views = container.run_triggers.list(principal, workspace_id, kind)
    page, meta, links = paginate(request, views)
    extra = _included(page, includes(request), lambda ws: serialize_workspace(container, principal, ws))
    return respond([serialize(v) for v in page], meta=meta, links=links, included=extra)


@router.post("/workspaces/{workspace_id}/run-triggers", openapi_extra=bodies.RUN_TRIGGER)
def create_run_trigger(
    workspace_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    if isinstance(body, dict) and isinstance(body.get("data"), dict) and not body["data"].get("type"):
        body["data"]["type"] = "run-triggers"  # HCP Terraform's documented payload names no type
    data = read_document(body, "run-triggers")
    view = container.run_triggers.create(principal, workspace_id, relationship_id(data, "sourceable", "workspaces"))
    return respond(serialize(view), 201)


@router.get("/run-triggers/{trigger_id}")
def read_run_trigger(
    trigger_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    view = container.run_triggers.get(principal, trigger_id)
    return respond(
        serialize(view),
        included=_included([view], includes(request), lambda ws: serialize_workspace(container, principal, ws)),
    )


@router.delete("/run-triggers/{trigger_id}")
def delete_run_trigger(trigger_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.run_triggers.delete(principal, trigger_id)
    return Response(status_code=204)
