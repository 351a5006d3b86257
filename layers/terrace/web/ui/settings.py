"""Workspace settings (name, execution mode, auto-apply, tool and its version, working directory), its project (move
to another), tags (add, remove), auto-destroy (a moment, a period of inactivity, or never) and deletion (after
typing the workspace's name), through the same service calls as the API."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from terrace.domain import errors
from terrace.domain.tags import TagRef
from terrace.domain.tool_versions import PRODUCTS, TOOLS
from terrace.domain.workspace import EXECUTION_MODES
from terrace.web.deps import ContainerDep
from terrace.web.errors import status_of
from terrace.web.ui.session import CheckedFormDep, SessionDep, field_of, render

router = APIRouter(prefix="/app", include_in_schema=False)
SETTINGS = "/{organization}/workspaces/{name}/settings"


def _form_of(ws: Any, tool: str) -> dict[str, str]:
    return {
        "iac_platform": tool,
        "name": ws.name,
        "execution_mode": ws.execution_mode,
        "agent_pool_id": ws.agent_pool_id or "",
        "auto_apply": "on" if ws.auto_apply else "",
        "auto_apply_run_trigger": "on" if ws.auto_apply_run_trigger else "",
        "terraform_version": ws.terraform_version,
        "working_directory": ws.working_directory,
    }


def _page(request: Request, session: Any, organization: str, ws: Any, status: int = 200, **extra: Any) -> Any:
    extra.setdefault("form", _form_of(ws, extra.get("tool") or ws.tool))
    return render(
        request,
        "settings.html",
        session,
        status=status,
        organization=organization,
        ws=ws,
        modes=EXECUTION_MODES,
        tools=[(tool, PRODUCTS[tool]) for tool in TOOLS],
        **extra,
    )


@router.get(SETTINGS)
def settings(request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str) -> Any:
    view = container.workspace_settings.read(session.principal, organization, name)
    return _page(request, session, organization, view.ws, pools=view.pools, projects=view.projects,
                 project_id=view.project_id, tool=view.tool, versions=view.versions)  # fmt: skip


@router.post(SETTINGS)
def update_settings(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str, form: CheckedFormDep
) -> Any:
    ws = container.workspaces.get_by_name(session.principal, organization, name)
    attributes = {
        "name": form.get("name", ws.name).strip(),
        "execution-mode": form.get("execution_mode", ""),
        "auto-apply": form.get("auto_apply") == "on",
        "auto-apply-run-trigger": form.get("auto_apply_run_trigger") == "on",
        "terraform-version": form.get("terraform_version", "").strip(),
        "working-directory": form.get("working_directory", "").strip(),
    }
    if form.get("iac_platform"):  # the tool its runs use: its versions are the ones the version field lists
        attributes["iac-platform"] = form["iac_platform"]
    if attributes["execution-mode"] == "agent":  # the pool it runs on (422 when absent or it does not allow it)
        attributes["agent-pool-id"] = form.get("agent_pool_id") or None
    try:
        updated = container.workspaces.update(session.principal, ws, attributes)
    except (errors.Invalid, errors.Conflict) as exc:
        view = container.workspace_settings.view_of(session.principal, organization, ws)
        return _page(request, session, organization, ws, status=422, form=form, error=exc.detail,
                     error_field=field_of(exc), pools=view.pools, projects=view.projects,
                     project_id=view.project_id, tool=view.tool, versions=view.versions)  # fmt: skip
    renamed = f"&renamed={name}" if updated.name != name else ""  # a new name is a new address
    return RedirectResponse(f"/app/{organization}/workspaces/{updated.name}/settings?saved=1{renamed}", status_code=303)


@router.post(SETTINGS + "/project")
def move_to_project(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str, form: CheckedFormDep
) -> Any:
    """Move the workspace to another project of its organization (its admins; a project they may read)."""
    view = container.workspace_settings.read(session.principal, organization, name)
    try:
        container.workspace_settings.move(session.principal, view.ws, form.get("project_id", ""))
    except (errors.Invalid, errors.Conflict, errors.Forbidden, errors.NotFound) as exc:
        message = "Choose one of the projects listed." if isinstance(exc, errors.NotFound) else exc.detail
        status = 422 if isinstance(exc, errors.NotFound) else status_of(exc)
        return _page(request, session, organization, view.ws, status=status, pools=view.pools,
                     projects=view.projects, project_id=view.project_id, project_error=message)  # fmt: skip
    return RedirectResponse(
        f"/app/{organization}/workspaces/{name}/settings?moved=1#workspace-project", status_code=303
    )


@router.post(SETTINGS + "/tags")
def change_tags(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str, form: CheckedFormDep
) -> Any:
    """Add the tags a form names (comma-separated), or remove the one it names (`remove`)."""
    ws = container.workspaces.get_by_name(session.principal, organization, name)
    try:
        if form.get("remove"):
            container.tags.remove_from_workspace(session.principal, ws, [TagRef(name=form["remove"])])
        else:
            names = [t.strip() for t in form.get("tags", "").split(",") if t.strip()]
            container.tags.add_to_workspace(session.principal, ws, [TagRef(name=t) for t in names])
    except (errors.Invalid, errors.Forbidden) as exc:
        return _page(request, session, organization, ws, status=status_of(exc), tags_error=exc.detail,
                     tags_form=form)  # fmt: skip
    return RedirectResponse(f"/app/{organization}/workspaces/{name}/settings?tagged=1#workspace-tags", status_code=303)


@router.post(SETTINGS + "/auto-destroy")
def change_auto_destroy(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str, form: CheckedFormDep
) -> Any:
    """Schedule the workspace's destroy at a moment (UTC), after a period of inactivity, or never (its admins)."""
    ws = container.workspaces.get_by_name(session.principal, organization, name)
    mode = form.get("auto_destroy_mode", "off")
    at = form.get("auto_destroy_at", "").strip()
    if mode == "at" and at and len(at) <= 16 and "T" in at:  # the datetime-local input: no seconds, no zone
        at += ":00Z"
    attributes: dict[str, Any] = {"auto-destroy-at": None, "auto-destroy-activity-duration": None}
    if mode == "at":
        attributes = {"auto-destroy-at": at or "(empty)"}
    elif mode == "duration":
        attributes = {"auto-destroy-activity-duration": form.get("auto_destroy_duration", "").strip() or "(empty)"}
    try:
        container.workspaces.update(session.principal, ws, attributes)
    except (errors.Invalid, errors.Forbidden) as exc:
        return _page(request, session, organization, ws, status=status_of(exc), auto_destroy_error=exc.detail,
                     auto_destroy_form=form)  # fmt: skip
    return RedirectResponse(f"/app/{organization}/workspaces/{name}/settings?scheduled=1#auto-destroy", status_code=303)


@router.post(SETTINGS + "/delete")
def delete_workspace(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str, form: CheckedFormDep
) -> Any:
    ws = container.workspaces.get_by_name(session.principal, organization, name)
    if form.get("confirm_name", "").strip() != ws.name:
        message = f"Type the workspace's name, {ws.name}, to delete it."
        return _page(request, session, organization, ws, status=422, delete_error=message)
    try:
        container.workspace_deletion.delete(session.principal, ws, safe=form.get("force") != "on")  # as the API
    except errors.Conflict as exc:
        return _page(request, session, organization, ws, status=409, delete_error=exc.detail)
    return RedirectResponse(f"/app/{organization}/workspaces?deleted={ws.name}", status_code=303)
