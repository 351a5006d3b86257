"""/api/v2/admin workspaces and runs of every organization (TFE's admin API). 404 to anyone but a site admin."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from terrace.domain.errors import Invalid
from terrace.web import admin_serializers as aser
from terrace.web import run_documents, serializers
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import JSONAPIResponse, JSONBody, paginate, respond
from terrace.web.routers.admin import includes

router = APIRouter(prefix="/api/v2/admin")
WORKSPACE_SORTS = ("name", "-name", "current-run.created-at", "-current-run.created-at")


def _statuses(request: Request, param: str) -> frozenset[str]:
    raw = request.query_params.get(param) or ""
    return frozenset(s.strip() for s in raw.split(",") if s.strip())  # a status Terrace lacks matches nothing


@router.get("/workspaces")
def list_workspaces(request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    statuses = _statuses(request, "filter[current_run][status]")
    found, current = container.site_admin.workspaces(principal, request.query_params.get("q") or "", statuses)
    sort = request.query_params.get("sort") or ""
    if sort and sort not in WORKSPACE_SORTS:
        raise Invalid(f"sort must be one of {', '.join(WORKSPACE_SORTS)}", pointer="/sort")
    if sort.endswith("name"):
        found.sort(key=lambda ws: ws.name, reverse=sort.startswith("-"))
    elif sort:  # by the current run's creation; workspaces without a run come last either way
        with_run = sorted((ws for ws in found if ws.id in current), key=lambda ws: current[ws.id].created_at)
        found = (with_run[::-1] if sort.startswith("-") else with_run) + [ws for ws in found if ws.id not in current]
    page, meta, links = paginate(request, found)
    wanted = includes(request, frozenset({"organization", "current_run"}))
    included: list[dict[str, Any]] = []
    if "organization" in wanted:
        orgs = {ws.organization for ws in page}
        included += [aser.organization(o) for o in container.organizations.all() if o.key in orgs]
    runs = [current[ws.id] for ws in page if ws.id in current]
    if "current_run" in wanted or sort.startswith(("current-run", "-current-run")):
        included += run_documents.runs(container, principal, runs)
    return respond(
        [aser.workspace(ws, container.organizations.name_of(ws.organization)) for ws in page],
        meta=meta,
        links=links,
        included=included,
    )


@router.get("/workspaces/{workspace_id}")
def read_workspace(workspace_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    ws = container.site_admin.workspace(principal, workspace_id)
    return respond(aser.workspace(ws, container.organizations.name_of(ws.organization)))


@router.delete("/workspaces/{workspace_id}")
def delete_workspace(workspace_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.workspace_deletion.delete_as_site_admin(principal, workspace_id)  # what an owner's delete does
    return Response(status_code=204)


@router.get("/runs")
def list_runs(request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    statuses = _statuses(request, "filter[status]")
    created = (request.query_params.get("filter[from]"), request.query_params.get("filter[to]"))
    runs = container.site_admin.runs(principal, request.query_params.get("q") or "", statuses, created)
    page, meta, links = paginate(request, runs)
    wanted = includes(request, frozenset({"workspace", "workspace.organization"}))
    included: list[dict[str, Any]] = []
    if wanted & {"workspace", "workspace.organization"}:
        workspaces = container.site_admin.workspaces_of(principal, page)
        included += [serializers.workspace(ws, permissions, org) for ws, permissions, org in workspaces]
        if "workspace.organization" in wanted:
            keys = {ws.organization for ws, _, _ in workspaces}
            included += [aser.organization(o) for o in container.site_admin.organizations_of(principal, keys)]
    return respond(run_documents.runs(container, principal, page), meta=meta, links=links, included=included)


@router.post("/runs/{run_id}/actions/force-cancel")
def force_cancel(run_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Response:
    comment = body.get("comment") if isinstance(body, dict) else None
    if comment is not None and not isinstance(comment, str):
        raise Invalid("comment must be a string", pointer="/comment")
    container.site_admin.force_cancel(principal, run_id)
    return Response(status_code=202)
