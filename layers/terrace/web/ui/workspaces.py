"""Create a workspace; the workspace overview (outputs with sensitive values masked, lock state); lock/unlock."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from terrace.domain import errors
from terrace.web.audit_trail import note_action
from terrace.web.deps import ContainerDep
from terrace.web.errors import status_of
from terrace.web.ui.session import CheckedFormDep, SessionDep, field_of, render
from terrace.web.ui.tokens import cli_host

router = APIRouter(prefix="/app", include_in_schema=False)


@router.get("/{organization}/workspaces/new")
def new_workspace_page(request: Request, container: ContainerDep, session: SessionDep, organization: str) -> Any:
    return _new_page(request, container, session, organization)


def _new_page(
    request: Request, container: Any, session: Any, organization: str, status: int = 200, **extra: Any
) -> Any:
    """The New workspace form, with the projects the caller may put it in (NotFound for a hidden organization)."""
    projects = sorted(container.projects.list(session.principal, organization), key=lambda p: p.name.lower())
    return render(request, "workspace_new.html", session, status=status, organization=organization,
                  projects=projects, default_tool=container.settings.default_tool,
                  **{"form": {}, **extra})  # fmt: skip


@router.post("/{organization}/workspaces/new")
def create_workspace(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, form: CheckedFormDep
) -> Any:
    attributes = {"name": form.get("name", "").strip(), "execution-mode": form.get("execution_mode", "remote")}
    if form.get("iac_platform"):  # the tool its runs use (a 422 for another value)
        attributes["iac-platform"] = form["iac_platform"]
    tags = [t.strip() for t in form.get("tags", "").split(",") if t.strip()]
    project_id = form.get("project") or None
    try:
        ws = container.workspaces.create(session.principal, organization, attributes, tags=tags, project_id=project_id)
    except (errors.Invalid, errors.Conflict, errors.NotFound) as exc:
        if isinstance(exc, errors.NotFound) and project_id is None:
            raise
        return _new_page(request, container, session, organization, status=422, form=form, error=exc.detail,
                         error_field=field_of(exc))  # fmt: skip
    return RedirectResponse(f"/app/{organization}/workspaces/{ws.name}", status_code=303)


@router.get("/{organization}/workspaces/{name}")
def overview(request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str) -> Any:
    return _overview_page(request, container, session, organization, name)


def _overview_page(
    request: Request, container: Any, session: Any, organization: str, name: str, status: int = 200, **extra: Any
) -> Any:
    view = container.workspace_overview.read(session.principal, organization, name)
    return render(
        request,
        "workspace.html",
        session,
        status=status,
        organization=organization,
        ws=view.ws,
        outputs=view.outputs,
        resources=view.resources,
        latest_run=view.latest_run,
        execution_mode=view.execution_mode,
        can=view.permissions,
        project_name=view.project_name,
        change_requests=view.change_requests,
        has_configuration=view.has_configuration,
        tool=view.tool,
        cloud_host=cli_host(container.settings.public_url),
        **extra,
    )


@router.post("/{organization}/workspaces/{name}/change-requests/{cr_id}/archive")
def archive_change_request(
    container: ContainerDep, session: SessionDep, organization: str, name: str, cr_id: str, form: CheckedFormDep
) -> Any:
    container.change_requests.archive(session.principal, cr_id)
    return RedirectResponse(f"/app/{organization}/workspaces/{name}", status_code=303)


LOCK_ACTIONS = ("lock", "unlock", "force-unlock")


@router.post("/{organization}/workspaces/{name}/lock")
def lock_action(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str, form: CheckedFormDep
) -> Any:
    """Lock, unlock (your own lock) or force-unlock (anyone's, for those allowed) as the page's button says; a form
    without `action` toggles. A refusal (someone else took or holds the lock meanwhile, a pending state upload)
    is shown on the workspace page itself."""
    ws = container.workspace_overview.workspace(session.principal, organization, name)
    action = form.get("action") or ("unlock" if ws.lock else "lock")
    if action not in LOCK_ACTIONS:
        raise errors.NotFound(f"no lock action {action}")
    note_action(request, action)  # its audit event: workspace.lock, .unlock or .force-unlock
    try:
        if action == "lock":
            container.locks.lock(session.principal, ws, form.get("reason", "") or "locked from the web UI")
        elif action == "unlock":
            container.locks.unlock(session.principal, ws)
        else:
            container.locks.force_unlock(session.principal, ws)
    except (errors.Conflict, errors.Invalid) as exc:
        return _overview_page(request, container, session, organization, name, status=status_of(exc), error=exc.detail)
    return RedirectResponse(f"/app/{organization}/workspaces/{name}", status_code=303)
