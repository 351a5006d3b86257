"""/api/v2 run comments, run events and cost estimates."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from terrace.bootstrap import Container
from terrace.domain.errors import NotFound
from terrace.domain.principal import Principal
from terrace.web import bodies, run_documents
from terrace.web import run_serializers as rser
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import (
    JSONAPIResponse,
    JSONBody,
    attributes,
    paginate,
    read_document,
    ref,
    resource,
    respond,
    respond_page,
)

router = APIRouter(prefix="/api/v2")


# comments --------------------------------------------------------------------------------
@router.get("/runs/{run_id}/comments")
def list_comments(run_id: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond_page(request, container.comments.list(principal, run_id), run_documents.comment_document)


@router.post("/runs/{run_id}/comments", openapi_extra=bodies.COMMENT)
def create_comment(run_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    data = read_document(body, "comments")
    comment = container.comments.create(principal, run_id, attributes(data).get("body"))
    return respond(run_documents.comment_document(comment), 201)


@router.get("/comments/{comment_id}")
def read_comment(comment_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond(run_documents.comment_document(container.comments.get(principal, comment_id)))


# run events ------------------------------------------------------------------------------
def _event(event: dict[str, Any], run_id: str, users: dict[str, str]) -> dict[str, Any]:
    return resource(
        "run-events",
        event["id"],
        {"action": event["action"], "created-at": event["created_at"], "description": event["description"]},
        {
            "actor": ref("users", users.get(event.get("actor") or "")),
            "comment": ref("comments", event.get("comment_id")),
            "target": ref("runs", run_id),
        },
        links={"self": f"/api/v2/run-events/{event['id']}"},
    )


def _respond_events(
    request: Request, container: Container, principal: Principal, run_id: str, events: list[dict[str, Any]], one: bool
) -> JSONAPIResponse:
    page, meta, links = (events, None, None) if one else paginate(request, events)
    users = run_documents.user_ids(container, [e.get("actor") or "" for e in page])
    names = run_documents.include_names(request)
    included: list[dict[str, Any]] = []
    if "actor" in names:
        included += [u for u in (run_documents.public_user(container, i) for i in set(users.values())) if u]
    if "comment" in names:
        for event in page:
            if event.get("comment_id"):
                comment = container.comments.get(principal, event["comment_id"])
                included.append(run_documents.comment_document(comment))
    documents = [_event(e, run_id, users) for e in page]
    return respond(documents[0] if one else documents, meta=meta, links=links, included=included)


@router.get("/runs/{run_id}/run-events")
def list_run_events(run_id: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    run, events = container.run_queries.events(principal, run_id)
    return _respond_events(request, container, principal, run.id, events, one=False)


@router.get("/run-events/{event_id}")
def read_run_event(
    event_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    run, event = container.run_queries.event(principal, event_id)
    return _respond_events(request, container, principal, run.id, [event], one=True)


# cost estimates --------------------------------------------------------------------------
@router.get("/cost-estimates/{cost_estimate_id}")
def read_cost_estimate(cost_estimate_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond(rser.cost_estimate(container.cost_estimates.run_of(principal, cost_estimate_id)))


@router.get("/runs/{run_id}/cost-estimate")
def read_run_cost_estimate(run_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    run = container.runs.get(principal, run_id)
    if run.cost_estimate is None:
        raise NotFound(f"run {run_id} has no cost estimate")
    return respond(rser.cost_estimate(run))


@router.get("/cost-estimates/{cost_estimate_id}/output")
def cost_estimate_output(cost_estimate_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    """The estimate as text (go-tfe's CostEstimates.Logs): one line per figure."""
    ce = container.cost_estimates.run_of(principal, cost_estimate_id).cost_estimate
    assert ce is not None
    lines = [
        f"Cost estimation: {ce.status}",
        f"Resources: {ce.matched_resources_count} of {ce.resources_count} estimated",
        f"Prior monthly cost: ${ce.prior_monthly_cost}",
        f"Proposed monthly cost: ${ce.proposed_monthly_cost}",
        f"Delta monthly cost: ${ce.delta_monthly_cost}",
    ]
    if ce.error_message:
        lines.append(ce.error_message)
    return Response("\n".join(lines) + "\n", media_type="text/plain")
