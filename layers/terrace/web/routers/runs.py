"""/api/v2 runs: create, read, lists, actions, the organization queue and capacity, run events."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from terrace.bootstrap import Container
from terrace.domain import run_filters, run_timing, tool_versions
from terrace.domain import runs as rs
from terrace.domain.comments import checked_body
from terrace.domain.errors import Invalid
from terrace.domain.principal import Principal
from terrace.domain.runs import Run
from terrace.domain.workspace import Workspace
from terrace.web import bodies, run_documents
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
)

router = APIRouter(prefix="/api/v2")


def respond_runs(
    request: Request, container: Container, principal: Principal, runs: list[Run], status_code: int = 200
) -> JSONAPIResponse:
    page, meta, links = paginate(request, runs)
    names = run_documents.include_names(request)
    included = run_documents.included(container, principal, page, names)
    checks = run_documents.lists_policy_checks(request)
    document = run_documents.runs(container, principal, page, policy_checks=checks)
    run_documents.with_tf_policy(names, document, included)
    return respond(document, status_code, meta=meta, links=links, included=included)


def respond_run(
    request: Request,
    container: Container,
    principal: Principal,
    run: Run,
    status_code: int = 200,
    ws: Workspace | None = None,
) -> JSONAPIResponse:
    names = run_documents.include_names(request)
    included = run_documents.included(container, principal, [run], names)
    document = run_documents.runs(
        container,
        principal,
        [run],
        events=True,
        workspaces=[ws] if ws else (),
        policy_checks=run_documents.lists_policy_checks(request),
    )[0]
    run_documents.with_tf_policy(names, [document], included)
    return respond(document, status_code, included=included)


@router.post("/runs", openapi_extra=bodies.RUN)
def create_run(body: JSONBody, request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    data = read_document(body, "runs")
    workspace_id = relationship_id(data, "workspace", "workspaces")
    if not workspace_id:
        raise Invalid("relationships.workspace is required", pointer="/data/relationships/workspace")
    cv_id = relationship_id(data, "configuration-version", "configuration-versions")
    source = run_timing.source_of_client(
        request.headers.get("terraform-version"), request.headers.get("x-terraform-integration")
    )
    client = tool_versions.client_tool(request.headers.get("user-agent"), request.headers.get("terraform-version"))
    run, ws = container.runs.create_for(principal, workspace_id, attributes(data), cv_id, source, client=client)
    return respond_run(request, container, principal, run, 201, ws=ws)


@router.get("/runs/{run_id}")
def read_run(run_id: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    run, ws = container.run_queries.readable(principal, run_id)  # the CLI polls this: see test_run_poll_reads
    return respond_run(request, container, principal, run, ws=ws)


@router.get("/workspaces/{workspace_id}/runs")
def list_runs(workspace_id: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    ws = container.workspaces.get(principal, workspace_id)
    runs = run_filters.select(container.runs.list(principal, ws), request.query_params, {ws.id: ws.name})
    return respond_runs(request, container, principal, runs)


@router.get("/organizations/{org}/runs")
def list_organization_runs(
    org: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    names = {ws.id: ws.name for ws in container.workspaces.list(principal, org)}
    runs = run_filters.select(container.run_queries.list_for_organization(principal, org), request.query_params, names)
    return respond_runs(request, container, principal, runs)


@router.get("/organizations/{org}/runs/queue")
def organization_queue(org: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond_runs(request, container, principal, container.run_queries.organization_queue_for(principal, org))


@router.get("/organizations/{org}/capacity")
def capacity(org: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    organization = container.organizations.get(principal, org)
    runs = container.run_queries.organization_queue(organization.name)
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


def _comment_of(body: Any) -> str | None:
    """An action's optional {"comment": "..."}, checked before the action runs (it becomes a run comment)."""
    comment = body.get("comment") if isinstance(body, dict) else None
    if not isinstance(comment, str) or not comment.strip():
        return None  # as before comments were kept: anything else is ignored
    return checked_body(comment, "comment")


def _act(container: Container, principal: Principal, run_id: str, body: Any, action: Any) -> Response:
    comment = _comment_of(body)
    action(principal, run_id)
    if comment is not None:
        container.comments.create(principal, run_id, comment)
    return Response(status_code=202)


# Clients send {}, {"comment": …} or a JSON:API-ish body: any JSON (or none) is accepted; a comment is kept.
@router.post("/runs/{run_id}/actions/apply", openapi_extra=bodies.RUN_ACTION)
def apply_run(run_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Response:
    return _act(container, principal, run_id, body, container.runs.apply)


@router.post("/runs/{run_id}/actions/discard", openapi_extra=bodies.RUN_ACTION)
def discard_run(run_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Response:
    return _act(container, principal, run_id, body, container.runs.discard)


@router.post("/runs/{run_id}/actions/cancel", openapi_extra=bodies.RUN_ACTION)
def cancel_run(run_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Response:
    return _act(container, principal, run_id, body, container.runs.cancel)


@router.post("/runs/{run_id}/actions/force-cancel", openapi_extra=bodies.RUN_ACTION)
def force_cancel_run(run_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Response:
    return _act(container, principal, run_id, body, container.runs.force_cancel)


@router.post("/runs/{run_id}/actions/force-execute", openapi_extra=bodies.RUN_ACTION)
def force_execute_run(run_id: str, _body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.runs.force_execute(principal, run_id)
    return Response(status_code=202)
