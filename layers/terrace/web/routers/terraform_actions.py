"""/api/v2 Terraform actions (HCP Terraform's actions read API, terraform 1.14+): a workspace's actions, one
action, and its invocations aggregated by run. The service is `services/runs/terraform_actions.py`; actions are
invoked by creating a run with `invoke-action-addrs` (`/runs`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from terrace.bootstrap import Container
from terrace.domain import terraform_actions as model
from terrace.domain.principal import Principal
from terrace.domain.terraform_actions import ActionView, RunSummary
from terrace.web import run_documents
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import JSONAPIResponse, paginate, ref, resource, respond

router = APIRouter(prefix="/api/v2")


def action_document(action: ActionView, *, show: bool = False) -> dict[str, Any]:
    declared = action.declared
    attributes: dict[str, Any] = {
        "address": declared.address,
        "module-address": declared.module_address,
        "provider": declared.provider,
        "documentation-url": None,
        "created-at": action.created_at,
        "updated-at": action.updated_at,
        "instance-type": declared.instance_type,
        "count-value": None,  # the count and the for_each keys are expressions until a run evaluates them
        "for-each-values": None,
    }
    if show:
        attributes["invocation-count"] = action.invocation_count
    last = action.last_invocation
    return resource(
        "actions",
        action.id,
        attributes,
        {
            "workspace": ref("workspaces", action.workspace_id),
            "last-invocation": ref("action-invocations", last[0] if last else None),
        },
        links={"self": f"/api/v2/terraform-actions/{action.id}"},
    )


def summary_document(summary: RunSummary, invoker: dict[str, Any]) -> dict[str, Any]:
    run = summary.run
    return resource(
        "action-invocation-run-summary",
        f"{summary.action_id}:{run.id}",
        {
            "aggregate-invocation-status": model.aggregate_status(run),
            "invocation-method": summary.method,
            "invoked-at": model.invoked_at(run),
            "invoked-by": invoker,
            "invocation-statuses": model.invocation_statuses(run, summary.count),
            "planned-invocation-count": summary.count,
        },
        {"action": ref("actions", summary.action_id), "run": ref("runs", run.id)},
    )


def _invokers(container: Container, principal: Principal, page: list[RunSummary]) -> dict[str, dict[str, Any]]:
    """username -> HCP's `invoked-by` (username and avatar), for the page's runs."""
    names = {s.run.created_by for s in page}
    ids = run_documents.user_ids(container, names, principal)
    found = {}
    for name in names:
        user = run_documents.public_user(container, ids[name]) if name in ids else None
        avatar = user["attributes"].get("avatar-url") if user else None
        found[name] = {"username": name or "system:not_a_user", "avatar-url": avatar}
    return found


@router.get("/workspaces/{workspace_id}/terraform-actions")
def list_actions(
    workspace_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    actions = container.terraform_actions.list(principal, workspace_id, request.query_params)
    page, meta, links = paginate(request, actions)
    return respond([action_document(a) for a in page], meta=meta, links=links)


@router.get("/terraform-actions/{action_id}")
def read_action(action_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond(action_document(container.terraform_actions.get(principal, action_id), show=True))


@router.get("/terraform-actions/{action_id}/invocations/run-summary")
def action_run_summary(
    action_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    summaries = container.terraform_actions.run_summary(principal, action_id, request.query_params)
    page, meta, links = paginate(request, summaries)
    invokers = _invokers(container, principal, page)
    return respond([summary_document(s, invokers[s.run.created_by]) for s in page], meta=meta, links=links)
