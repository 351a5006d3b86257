"""Runs of a workspace: the list, queueing a new plan, the run page (timeline, plan summary, live logs)
and its actions (Confirm & apply, Discard, Cancel), which appear only when the run's `actions` allow them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from terrace.bootstrap import Container
from terrace.domain import clock, errors
from terrace.domain import runs as rs
from terrace.domain.plan_json import SYMBOLS, resource_changes
from terrace.domain.principal import Principal
from terrace.domain.runs import Run
from terrace.domain.task_stages import TS_AWAITING_OVERRIDE
from terrace.domain.web_sessions import WebSession
from terrace.domain.workspace import Workspace
from terrace.web import task_stage_documents
from terrace.web.deps import ContainerDep
from terrace.web.ui.cloudwatch import job_links
from terrace.web.ui.run_logs import FIRST_LIMIT, LIVE_LIMIT, read_chunk
from terrace.web.ui.session import CheckedFormDep, SessionDep, render

router = APIRouter(prefix="/app", include_in_schema=False)
ACTIONS: dict[str, Callable[[Container, Principal, str], Run]] = {
    "apply": lambda c, p, r: c.runs.apply(p, r),
    "discard": lambda c, p, r: c.runs.discard(p, r),
    "cancel": lambda c, p, r: c.runs.cancel(p, r),
    "force-cancel": lambda c, p, r: c.runs.force_cancel(p, r),
}


def load(container: Container, session: WebSession, organization: str, name: str, run_id: str) -> tuple[Workspace, Run]:
    ws = container.workspaces.get_by_name(session.principal, organization, name)
    run = container.runs.get(session.principal, run_id)
    if run.workspace_id != ws.id:
        raise errors.NotFound(f"run {run_id} not found")
    return ws, run


def timeline(run: Run) -> list[tuple[str, str]]:
    """(label, timestamp) of each status the run went through, oldest first."""
    steps = sorted(run.status_timestamps.items(), key=lambda item: item[1])
    return [(key.removesuffix("-at").replace("-", " ").capitalize(), at) for key, at in steps]


def _result_row(document: dict[str, Any]) -> dict[str, Any]:
    """One result a stage's participant reported (a task result, a policy evaluation), as the run page shows it."""
    attrs = document.get("attributes") or {}
    return {
        "name": attrs.get("task-name") or attrs.get("policy-set-name") or attrs.get("name") or document["id"],
        "kind": str(document["type"]).replace("-", " ").removesuffix("s"),
        "status": attrs.get("status") or "",
        "message": attrs.get("message") or "",
        "url": attrs.get("url") if str(attrs.get("url") or "").startswith(("https://", "http://")) else None,
        "enforcement": attrs.get("workspace-task-enforcement-level") or attrs.get("enforcement-level") or "",
    }


def stage_views(container: Container, session: WebSession, run: Run) -> list[dict[str, Any]]:
    """The run's task stages with their results (no read for a run without stages)."""
    if not run.task_stage_ids:
        return []
    can = container.stage_progress.can_override(session.principal, run)
    names = set(task_stage_documents.STAGE_INCLUDES)
    return [
        {
            "stage": stage,
            "results": [
                _result_row(d) for d in task_stage_documents.included(container, session.principal, [stage], names)
            ],
            "can_override": can and stage.status == TS_AWAITING_OVERRIDE,
        }
        for stage in container.stage_progress.of_run(run)
    ]


def live_context(container: Container, session: WebSession, ws: Workspace, run: Run) -> dict[str, Any]:
    """What the run's live header shows: status, timeline, allowed actions, plan summary."""
    changes = None
    if run.plan.status == rs.P_FINISHED and run.plan.json_key:
        try:
            changes = resource_changes(container.plans.redacted(session.principal, run.plan.id))
        except errors.NotFound:  # no JSON plan, or the caller may not read state
            changes = None
    perms = container.workspaces.permissions(session.principal, ws)
    allowed = run.actions(container.settings.force_cancel_cooloff_s, clock.epoch())
    return {
        "ws": ws,
        "run": run,
        "timeline": timeline(run),
        "changes": changes,
        "symbols": SYMBOLS,
        "stages": stage_views(container, session, run),
        "can": {
            "apply": allowed["is-confirmable"] and perms["can-queue-apply"],
            "discard": allowed["is-discardable"] and perms["can-queue-apply"],
            "cancel": allowed["is-cancelable"] and perms["can-queue-run"],
            "force-cancel": allowed["is-force-cancelable"] and perms["can-queue-run"],
        },
    }


@router.get("/{organization}/workspaces/{name}/runs")
def runs_list(request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str) -> Any:
    ws = container.workspaces.get_by_name(session.principal, organization, name)
    return _list_page(request, container, session, organization, ws)


def _list_page(
    request: Request, container: Container, session: WebSession, organization: str, ws: Workspace, **extra: Any
) -> Any:
    runs = sorted(container.runs.list(session.principal, ws), key=lambda r: (r.created_at, r.id), reverse=True)
    return render(request, "runs.html", session, organization=organization, ws=ws, runs=runs, **extra)


@router.post("/{organization}/workspaces/{name}/runs")
def queue_plan(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str, form: CheckedFormDep
) -> Any:
    """Start a new run from the workspace's latest configuration version (TFC's "start new run")."""
    ws = container.workspaces.get_by_name(session.principal, organization, name)
    message = form.get("message", "").strip()[:500] or "Queued from the web UI"
    try:
        run = container.runs.create(session.principal, ws, {"message": message}, None)
    except (errors.Invalid, errors.Conflict) as exc:
        return _list_page(request, container, session, organization, ws, status=422, error=exc.detail)
    return RedirectResponse(f"/app/{organization}/workspaces/{name}/runs/{run.id}", status_code=303)


@router.get("/{organization}/workspaces/{name}/runs/{run_id}")
def run_page(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str, run_id: str
) -> Any:
    ws, run = load(container, session, organization, name, run_id)
    return _run_page(request, container, session, organization, ws, run)


def _run_page(
    request: Request,
    container: Container,
    session: WebSession,
    organization: str,
    ws: Workspace,
    run: Run,
    **extra: Any,
) -> Any:
    logs = [read_chunk(container.logs, run, phase, 0, FIRST_LIMIT) for phase in ("plan", "apply")]
    cloudwatch = {log.phase: job_links(container.settings, run.phase(log.phase).id) for log in logs if log.started}
    context = live_context(container, session, ws, run)
    return render(
        request, "run.html", session, organization=organization, logs=logs, cloudwatch=cloudwatch, **context, **extra
    )


@router.get("/{organization}/workspaces/{name}/runs/{run_id}/live")
def run_live(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str, run_id: str
) -> Any:
    """The run page's header, polled by htmx while the run is not final."""
    ws, run = load(container, session, organization, name, run_id)
    context = live_context(container, session, ws, run)
    return render(request, "run_live.html", session, organization=organization, **context)


@router.get("/{organization}/workspaces/{name}/runs/{run_id}/logs/{phase}")
def run_log(
    request: Request,
    container: ContainerDep,
    session: SessionDep,
    organization: str,
    name: str,
    run_id: str,
    phase: str,
    offset: int = 0,
) -> Any:
    """The log bytes from `offset` as HTML, followed by the poller for the next ones (none once done)."""
    if phase not in ("plan", "apply") or offset < 0:
        raise errors.NotFound("log not found")
    ws, run = load(container, session, organization, name, run_id)
    chunk = read_chunk(container.logs, run, phase, offset, LIVE_LIMIT)
    return render(request, "run_log.html", session, organization=organization, ws=ws, run=run, log=chunk)


@router.post("/{organization}/workspaces/{name}/runs/{run_id}/actions/{action}")
def run_action(
    request: Request,
    container: ContainerDep,
    session: SessionDep,
    organization: str,
    name: str,
    run_id: str,
    action: str,
    form: CheckedFormDep,
) -> Any:
    if action not in ACTIONS:
        raise errors.NotFound(f"no run action {action}")
    ws, run = load(container, session, organization, name, run_id)
    try:
        ACTIONS[action](container, session.principal, run.id)
    except errors.Conflict as exc:
        return _run_page(
            request,
            container,
            session,
            organization,
            ws,
            container.runs.get(session.principal, run.id),
            status=409,
            error=exc.detail,
        )
    return RedirectResponse(f"/app/{organization}/workspaces/{name}/runs/{run.id}", status_code=303)


@router.get("/{organization}/{name}/runs/{run_id}")
def client_run_link(organization: str, name: str, run_id: str) -> RedirectResponse:
    """The run URL the `cloud` block prints (`/app/<org>/<workspace>/runs/<run>`, as HCP Terraform's) goes to
    the run page; signing in and permissions are that page's."""
    return RedirectResponse(f"/app/{organization}/workspaces/{name}/runs/{run_id}", status_code=307)
