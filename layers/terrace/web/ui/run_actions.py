"""The run page's forms: its actions (Confirm & apply, Discard, Cancel, Force cancel), each with the optional
comment of the page's one comment box, and that box on its own. Refusals show on the run page itself."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from terrace.domain import errors
from terrace.web.deps import ContainerDep
from terrace.web.errors import status_of
from terrace.web.ui.runs import load, show_run
from terrace.web.ui.session import CheckedFormDep, SessionDep

router = APIRouter(prefix="/app", include_in_schema=False)


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
    if action not in container.run_pages.actions:
        raise errors.NotFound(f"no run action {action}")
    ws, run = load(container, session, organization, name, run_id)
    comment = form.get("comment", "").strip() or None
    try:
        container.run_pages.act(session.principal, run, action, comment)
    except (errors.Conflict, errors.Invalid) as exc:
        status = 422 if isinstance(exc, errors.Invalid) else 409
        run = container.run_pages.reread(session.principal, run)
        return show_run(request, container, session, organization, ws, run, status=status, error=exc.detail)
    return RedirectResponse(f"/app/{organization}/workspaces/{name}/runs/{run.id}", status_code=303)


@router.post("/{organization}/workspaces/{name}/runs/{run_id}/comments")
def add_comment(
    request: Request,
    container: ContainerDep,
    session: SessionDep,
    organization: str,
    name: str,
    run_id: str,
    form: CheckedFormDep,
) -> Any:
    """The run page's comment box on its own (with an action, the action's route keeps it)."""
    ws, run = load(container, session, organization, name, run_id)
    try:
        container.run_pages.comment(session.principal, run, form.get("comment", ""))
    except (errors.Invalid, errors.Forbidden) as exc:
        run = container.run_pages.reread(session.principal, run)
        return show_run(request, container, session, organization, ws, run, status=status_of(exc), error=exc.detail)
    return RedirectResponse(f"/app/{organization}/workspaces/{name}/runs/{run.id}#run-comments", status_code=303)
