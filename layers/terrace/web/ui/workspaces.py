"""Create a workspace; the workspace overview (outputs with sensitive values masked, lock state); lock/unlock."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from terrace.domain import errors
from terrace.web.deps import ContainerDep
from terrace.web.ui.session import CheckedFormDep, SessionDep, field_of, render

router = APIRouter(prefix="/app", include_in_schema=False)


@router.get("/{organization}/workspaces/new")
def new_workspace_page(request: Request, container: ContainerDep, session: SessionDep, organization: str) -> Any:
    container.organizations.get(session.principal, organization)
    return render(request, "workspace_new.html", session, organization=organization, form={})


@router.post("/{organization}/workspaces/new")
def create_workspace(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, form: CheckedFormDep
) -> Any:
    attributes = {"name": form.get("name", "").strip(), "execution-mode": form.get("execution_mode", "remote")}
    tags = [t.strip() for t in form.get("tags", "").split(",") if t.strip()]
    try:
        ws = container.workspaces.create(session.principal, organization, attributes, tags=tags)
    except (errors.Invalid, errors.Conflict) as exc:
        return render(
            request,
            "workspace_new.html",
            session,
            status=422,
            organization=organization,
            form=form,
            error=exc.detail,
            error_field=field_of(exc),
        )
    return RedirectResponse(f"/app/{organization}/workspaces/{ws.name}", status_code=303)


@router.get("/{organization}/workspaces/{name}")
def overview(request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str) -> Any:
    view = container.workspace_overview.read(session.principal, organization, name)
    return render(
        request,
        "workspace.html",
        session,
        organization=organization,
        ws=view.ws,
        outputs=view.outputs,
        resources=view.resources,
        latest_run=view.latest_run,
    )


@router.post("/{organization}/workspaces/{name}/lock")
def toggle_lock(
    container: ContainerDep, session: SessionDep, organization: str, name: str, form: CheckedFormDep
) -> Any:
    ws = container.workspaces.get_by_name(session.principal, organization, name)
    if ws.lock is None:
        container.locks.lock(session.principal, ws, form.get("reason", "") or "locked from the web UI")
    else:
        container.locks.unlock(session.principal, ws)
    return RedirectResponse(f"/app/{organization}/workspaces/{name}", status_code=303)
