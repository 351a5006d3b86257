"""State versions of a workspace: the list, one version, the diff of any two, download, and roll back
(after a confirmation page) through the rollback service the API uses."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, StreamingResponse

from terrace.bootstrap import Container
from terrace.domain import errors, state_diff
from terrace.domain.web_sessions import WebSession
from terrace.domain.workspace import Workspace
from terrace.web.deps import ContainerDep
from terrace.web.ui.session import CheckedFormDep, SessionDep, render

router = APIRouter(prefix="/app", include_in_schema=False)
STATES = "/{organization}/workspaces/{name}/states"


def _workspace(container: Container, session: WebSession, organization: str, name: str) -> Workspace:
    return container.workspaces.get_by_name(session.principal, organization, name)


def _in_workspace(container: Container, session: WebSession, ws: Workspace, sv_id: str) -> Any:
    sv = container.state_versions.get(session.principal, sv_id)
    if sv.workspace_id != ws.id:
        raise errors.NotFound(f"state version {sv_id} not found")
    return sv


@router.get(STATES)
def states(request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str) -> Any:
    ws = _workspace(container, session, organization, name)
    versions = container.state_versions.list_for(session.principal, ws)
    return render(request, "states.html", session, organization=organization, ws=ws, versions=versions)


@router.get(STATES + "/diff")
def diff(
    request: Request,
    container: ContainerDep,
    session: SessionDep,
    organization: str,
    name: str,
    before: str = "",
    after: str = "",
) -> Any:
    ws = _workspace(container, session, organization, name)
    old, new = (_in_workspace(container, session, ws, sv_id) for sv_id in (before, after))
    changes = state_diff.diff(
        container.state_versions.document(session.principal, old.id),
        container.state_versions.document(session.principal, new.id),
    )
    return render(request, "state_diff.html", session, organization=organization, ws=ws, old=old, new=new, diff=changes)


@router.get(STATES + "/{sv_id}")
def state(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str, sv_id: str
) -> Any:
    ws = _workspace(container, session, organization, name)
    sv = _in_workspace(container, session, ws, sv_id)
    resources = state_diff.instances(container.state_versions.document(session.principal, sv.id))
    outputs, _ = container.state_versions.outputs(session.principal, sv.id)
    return render(
        request, "state.html", session, organization=organization, ws=ws, sv=sv, resources=resources, outputs=outputs
    )


@router.get(STATES + "/{sv_id}/download")
def download(container: ContainerDep, session: SessionDep, organization: str, name: str, sv_id: str) -> Any:
    ws = _workspace(container, session, organization, name)
    sv = _in_workspace(container, session, ws, sv_id)
    container.state_versions.document(session.principal, sv.id)  # finalized, and READ_STATE
    filename = f"{ws.name}-{sv.serial}.tfstate"
    return StreamingResponse(
        container.state_versions.iter_state(sv),
        media_type="application/json",
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


@router.get(STATES + "/{sv_id}/rollback")
def confirm_rollback(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str, sv_id: str
) -> Any:
    ws, sv = container.state_rollback.confirmation(session.principal, organization, name, sv_id)
    return render(request, "state_rollback.html", session, organization=organization, ws=ws, sv=sv)


@router.post(STATES + "/{sv_id}/rollback")
def rollback(
    request: Request,
    container: ContainerDep,
    session: SessionDep,
    organization: str,
    name: str,
    sv_id: str,
    form: CheckedFormDep,
) -> Any:
    """Lock the workspace if nobody holds it, roll back, release the lock taken here (`StateRollback`)."""
    try:
        restored = container.state_rollback.rollback_under_lock(session.principal, organization, name, sv_id)
    except errors.Conflict as exc:  # the confirmation page again, with the reason and the workspace as it is now
        ws, sv = container.state_rollback.confirmation(session.principal, organization, name, sv_id)
        return render(
            request,
            "state_rollback.html",
            session,
            status=409,
            organization=organization,
            ws=ws,
            sv=sv,
            error=exc.detail,
        )
    return RedirectResponse(f"/app/{organization}/workspaces/{name}/states/{restored.id}", status_code=303)
