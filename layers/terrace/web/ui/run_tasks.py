"""Run tasks in the web UI: the organization's tasks (list, add, delete; `manage-run-tasks`), a workspace's
attachments (attach at stages with an enforcement level, detach), and the run page's Override button of a task stage.
The same service calls as the API."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from terrace.domain import errors
from terrace.domain.task_stages import STAGES
from terrace.web.deps import ContainerDep
from terrace.web.ui.session import CheckedFormDep, SessionDep, field_of, render

router = APIRouter(prefix="/app", include_in_schema=False)
TASKS = "/{organization}/settings/tasks"
WS_TASKS = "/{organization}/workspaces/{name}/tasks"


def _tasks_page(request: Request, container: Any, session: Any, organization: str, **extra: Any) -> Any:
    name, tasks = container.run_tasks.list(session.principal, organization)
    extra.setdefault("form", {})
    return render(request, "run_tasks.html", session, organization=name, tasks=tasks, **extra)


@router.get(TASKS)
def tasks(request: Request, container: ContainerDep, session: SessionDep, organization: str) -> Any:
    return _tasks_page(request, container, session, organization)


@router.post(TASKS)
def create_task(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, form: CheckedFormDep
) -> Any:
    attrs: dict[str, Any] = {
        "name": form.get("name", "").strip(),
        "url": form.get("url", "").strip(),
        "description": form.get("description", ""),
        "enabled": form.get("enabled") == "on",
        "category": "task",
    }
    if form.get("hmac-key"):
        attrs["hmac-key"] = form["hmac-key"]
    try:
        container.run_tasks.create(session.principal, organization, attrs)
    except (errors.Invalid, errors.Conflict, errors.Forbidden) as exc:
        kept = {k: v for k, v in form.items() if k != "hmac-key"}  # a key is never echoed back
        return _tasks_page(
            request,
            container,
            session,
            organization,
            status=422,
            form=kept,
            error=exc.detail,
            error_field=field_of(exc),
        )
    return RedirectResponse(f"/app/{organization}/settings/tasks", status_code=303)


@router.post(TASKS + "/{task_id}/delete")
def delete_task(
    container: ContainerDep, session: SessionDep, organization: str, task_id: str, form: CheckedFormDep
) -> Any:
    container.run_tasks.delete(session.principal, task_id)
    return RedirectResponse(f"/app/{organization}/settings/tasks", status_code=303)


def _workspace_page(request: Request, container: Any, session: Any, organization: str, name: str, **extra: Any) -> Any:
    view = container.run_tasks.workspace_view(session.principal, organization, name)
    extra.setdefault("form", {})
    return render(request, "workspace_tasks.html", session, organization=organization, stages=STAGES, **view, **extra)


@router.get(WS_TASKS)
def workspace_tasks(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str
) -> Any:
    return _workspace_page(request, container, session, organization, name)


@router.post(WS_TASKS)
def attach_task(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str, form: CheckedFormDep
) -> Any:
    ws = container.workspaces.get_by_name(session.principal, organization, name)
    stages = [stage for stage in STAGES if form.get(f"stage-{stage}") == "on"] or None
    attrs: dict[str, Any] = {"enforcement-level": form.get("enforcement-level", ""), "stages": stages}
    try:
        container.run_tasks.attach(session.principal, ws.id, form.get("task") or None, attrs)
    except (errors.Invalid, errors.Conflict, errors.Forbidden, errors.NotFound) as exc:
        return _workspace_page(request, container, session, organization, name, status=422, form=form, error=exc.detail)
    return RedirectResponse(f"/app/{organization}/workspaces/{name}/tasks", status_code=303)


@router.post(WS_TASKS + "/{attachment_id}/delete")
def detach_task(
    container: ContainerDep, session: SessionDep, organization: str, name: str, attachment_id: str, form: CheckedFormDep
) -> Any:
    ws = container.workspaces.get_by_name(session.principal, organization, name)
    container.run_tasks.detach(session.principal, ws.id, attachment_id)
    return RedirectResponse(f"/app/{organization}/workspaces/{name}/tasks", status_code=303)


@router.post("/{organization}/workspaces/{name}/runs/{run_id}/task-stages/{stage_id}/override")
def override_stage(
    container: ContainerDep,
    session: SessionDep,
    organization: str,
    name: str,
    run_id: str,
    stage_id: str,
    form: CheckedFormDep,
) -> Any:
    """The run page's Override button (a stage that awaits an override; manage-policy-overrides). A stage that no
    longer awaits one is the 409 error page."""
    container.stage_progress.override(session.principal, stage_id, form.get("comment") or None, run_id=run_id)
    return RedirectResponse(f"/app/{organization}/workspaces/{name}/runs/{run_id}", status_code=303)
