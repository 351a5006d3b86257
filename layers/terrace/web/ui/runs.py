"""Runs of a workspace: the list, queueing a new plan, the run page (timeline, plan summary, live logs)
and its actions (Confirm & apply, Discard, Cancel), which appear only when the run's `actions` allow them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from terrace.bootstrap import Container
from terrace.domain import clock, errors, run_timing
from terrace.domain import runs as rs
from terrace.domain.plan_json import SYMBOLS
from terrace.domain.runs import Run
from terrace.domain.task_stages import TS_AWAITING_OVERRIDE
from terrace.domain.web_sessions import WebSession
from terrace.domain.workspace import Workspace
from terrace.services.runs.run_pages import RunHeader
from terrace.web import task_stage_documents
from terrace.web.deps import ContainerDep
from terrace.web.errors import status_of
from terrace.web.ui import run_downloads, run_labels
from terrace.web.ui.ansi import plain
from terrace.web.ui.cloudwatch import job_links
from terrace.web.ui.log_errors import error_blocks
from terrace.web.ui.run_logs import FIRST_LIMIT, LIVE_LIMIT, read_chunk
from terrace.web.ui.session import CheckedFormDep, SessionDep, render

router = APIRouter(prefix="/app", include_in_schema=False)
router.include_router(run_downloads.router)


def load(container: Container, session: WebSession, organization: str, name: str, run_id: str) -> tuple[Workspace, Run]:
    return container.run_pages.load(session.principal, organization, name, run_id)


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
        "messages": [],
    }


def stage_views(container: Container, session: WebSession, header: RunHeader) -> list[dict[str, Any]]:
    """The run's task stages with their results (read only for a run with stages)."""
    finer = task_stage_documents.STAGE_ROWS  # kinds shown a row per part (a policy evaluation: per policy)
    names = {name for name, (kind, _) in task_stage_documents.STAGE_INCLUDES.items() if kind not in finer}
    principal = session.principal
    return [
        {
            "stage": stage,
            "results": [_result_row(d) for d in task_stage_documents.included(container, principal, [stage], names)]
            + [
                row
                for kind, rows in finer.items()
                if stage.ids(kind)
                for row in rows(container, principal, stage.ids(kind))
            ],
            "can_override": header.can_override and stage.status == TS_AWAITING_OVERRIDE,
        }
        for stage in header.stages
    ]


def live_context(container: Container, session: WebSession, ws: Workspace, run: Run) -> dict[str, Any]:
    """What the run's live header shows: status, timeline, allowed actions, plan summary."""
    header = container.run_pages.header(session.principal, ws, run)
    perms = header.permissions
    now = clock.utcnow()
    allowed = run.actions(container.settings.force_cancel_cooloff_s, now.timestamp())
    wait = container.run_pages.waiting(ws, run)
    return {
        "ws": ws,
        "run": run,
        "status_line": f"Run status: {run_labels.describe(run).label}",
        "error_lines": plain(run.error_message or "").strip().split("\n") if run.error_message else [],
        "wait": wait,
        "heard_s": int(now.timestamp() - wait.heard_at) if wait and wait.heard_at else None,
        "source": run_timing.source_label(run.source),
        "phase_times": run_timing.phase_times(run.status_timestamps, run.status, now),
        "duration": run_timing.duration,
        "timeline": timeline(run),
        "changes": header.changes,
        "change_groups": grouped(header.changes or []),
        "symbols": SYMBOLS,
        "stages": stage_views(container, session, header),
        "can": {
            "apply": allowed["is-confirmable"] and perms["can-queue-apply"],
            "discard": allowed["is-discardable"] and perms["can-queue-apply"],
            "cancel": allowed["is-cancelable"] and perms["can-queue-run"],
            "force-cancel": allowed["is-force-cancelable"] and perms["can-queue-run"],
            "comment": perms["can-queue-run"],  # who may comment (`CommentService.create`)
        },
    }


CHANGE_ORDER = ("create", "update", "replace", "delete", "read")
CHANGE_TITLES = {"create": "to add", "update": "to change", "replace": "to replace", "delete": "to destroy",
                 "read": "to read"}  # fmt: skip


def grouped(changes: list[tuple[str, str]]) -> list[tuple[str, str, list[str]]]:
    """The plan's resource changes by action (kind, title, addresses), in the order a reader checks them."""
    by_kind: dict[str, list[str]] = {}
    for kind, address in changes:
        by_kind.setdefault(kind, []).append(address)
    return [(kind, CHANGE_TITLES[kind], by_kind[kind]) for kind in CHANGE_ORDER if kind in by_kind]


@router.get("/{organization}/workspaces/{name}/runs")
def runs_list(request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str) -> Any:
    ws = container.workspaces.get_by_name(session.principal, organization, name)
    return _list_page(request, container, session, organization, ws)


def _list_page(
    request: Request, container: Container, session: WebSession, organization: str, ws: Workspace, **extra: Any
) -> Any:
    runs = sorted(container.runs.list(session.principal, ws), key=lambda r: (r.created_at, r.id), reverse=True)
    mode = container.workspaces.execution_mode(ws)
    can = container.workspaces.permissions(session.principal, ws)
    configured = container.runs.has_configuration(session.principal, ws)
    now = clock.utcnow()
    meta = {run.id: compact(run, now) for run in runs}
    return render(
        request,
        "runs.html",
        session,
        organization=organization,
        ws=ws,
        runs=runs,
        meta=meta,
        execution_mode=mode,
        can=can,
        kinds=RUN_KINDS,
        has_configuration=configured,
        **{"form": {}, **extra},
    )


def compact(run: Run, now: datetime) -> str:
    """The runs list's label of where a run came from and how long it took (so far): "CLI · 1m 4s"."""
    took = run_timing.duration(run_timing.total_seconds(run.status_timestamps, run.status, now))
    return f"{run_timing.source_label(run.source)} · {took}"


# the New run form's kinds: value -> (label, the run's attributes)
RUN_KINDS: dict[str, tuple[str, dict[str, bool]]] = {
    "plan-and-apply": ("Plan and apply", {}),
    "plan-only": ("Plan only", {"plan-only": True}),
    "refresh-only": ("Refresh only", {"refresh-only": True}),
    "destroy": ("Destroy", {"is-destroy": True}),
}


def new_run_attributes(form: dict[str, str]) -> dict[str, Any]:
    """The run the New run form describes, as the API's attributes (the run service checks them and who may)."""
    kind = form.get("kind") or "plan-and-apply"
    if kind not in RUN_KINDS:
        raise errors.Invalid(f"run type must be one of {', '.join(RUN_KINDS)}", pointer="/data/attributes/kind")
    attributes: dict[str, Any] = {"message": form.get("message", "").strip() or "Queued from the web UI"}
    attributes.update(RUN_KINDS[kind][1])
    for key, field in (("target-addrs", "targets"), ("replace-addrs", "replace")):
        addresses = [a.strip() for line in form.get(field, "").splitlines() for a in line.split(",") if a.strip()]
        if addresses:
            attributes[key] = addresses
    return attributes


@router.post("/{organization}/workspaces/{name}/runs")
def queue_plan(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str, form: CheckedFormDep
) -> Any:
    """Start a new run from the workspace's latest configuration version (TFC's "start new run")."""
    ws = container.workspaces.get_by_name(session.principal, organization, name)
    try:
        attributes = new_run_attributes(form)
        run = container.runs.create(session.principal, ws, attributes, None, run_timing.UI)
    except (errors.Invalid, errors.Conflict, errors.Forbidden) as exc:
        return _list_page(request, container, session, organization, ws, status=status_of(exc), error=exc.detail,
                          form=form)  # fmt: skip
    return RedirectResponse(f"/app/{organization}/workspaces/{name}/runs/{run.id}", status_code=303)


@router.get("/{organization}/workspaces/{name}/runs/{run_id}")
def run_page(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str, run_id: str
) -> Any:
    ws, run = load(container, session, organization, name, run_id)
    return show_run(request, container, session, organization, ws, run)


def show_run(
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
    # an errored run shows terraform's `Error:` blocks above the logs: from what the page read of them, else (a
    # log longer than the page reads) from the last lines the runner reported with the error
    failures = [block for log in logs for block in error_blocks(log.text)] if run.status == rs.ERRORED else []
    if run.status == rs.ERRORED and not failures:
        failures = error_blocks(run.error_message or "")
    return render(
        request,
        "run.html",
        session,
        organization=organization,
        logs=logs,
        cloudwatch=cloudwatch,
        failures=failures,
        comments=container.run_pages.comments(session.principal, run),
        **context,
        **extra,
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


@router.get("/{organization}/{name}/runs/{run_id}")
def client_run_link(organization: str, name: str, run_id: str) -> RedirectResponse:
    """The run URL the `cloud` block prints (`/app/<org>/<workspace>/runs/<run>`, as HCP Terraform's) goes to
    the run page; signing in and permissions are that page's."""
    return RedirectResponse(f"/app/{organization}/workspaces/{name}/runs/{run_id}", status_code=307)
