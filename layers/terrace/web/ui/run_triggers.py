"""A workspace's run triggers on its settings page (`settings.html` loads this section; without htmx its link
opens it as a page): the source workspaces, a select to add one, a button to remove each; the same service calls
as the API (`services/workspaces/run_triggers.py`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from terrace.domain import errors
from terrace.web.deps import ContainerDep
from terrace.web.ui.session import CheckedFormDep, SessionDep, render

router = APIRouter(prefix="/app", include_in_schema=False)
PAGE = "/{organization}/workspaces/{name}/settings/run-triggers"


def _render(request: Request, container: Any, session: Any, organization: str, name: str, **extra: Any) -> Any:
    ws = container.workspaces.get_by_name(session.principal, organization, name)
    panel = container.run_triggers.panel(session.principal, ws)
    fragment = request.headers.get("HX-Request") == "true" and not extra
    template = "_run_triggers.html" if fragment else "run_triggers.html"
    return render(request, template, session, organization=organization, ws=ws, panel=panel, **extra)


@router.get(PAGE)
def run_triggers(request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str) -> Any:
    return _render(request, container, session, organization, name)


@router.post(PAGE)
def add_source(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str, form: CheckedFormDep
) -> Any:
    ws = container.workspaces.get_by_name(session.principal, organization, name)
    try:
        container.run_triggers.create(session.principal, ws.id, form.get("sourceable_id", "").strip() or None)
    except (errors.Invalid, errors.NotFound) as exc:
        return _render(request, container, session, organization, name, status=422, error=exc.detail)
    return RedirectResponse(f"/app/{organization}/workspaces/{name}/settings?saved=1#run-triggers", status_code=303)


@router.post(PAGE + "/{trigger_id}/delete")
def remove_source(
    container: ContainerDep, session: SessionDep, organization: str, name: str, trigger_id: str, form: CheckedFormDep
) -> Any:
    container.run_triggers.delete(session.principal, trigger_id)
    return RedirectResponse(f"/app/{organization}/workspaces/{name}/settings?saved=1#run-triggers", status_code=303)
