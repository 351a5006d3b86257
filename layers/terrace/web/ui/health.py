"""A workspace's Health tab: its last health assessment (drifted resources with what changed, failing checks with
their messages, when it ran), assessments on or off, and an assessment started now (`services/runs/health.py`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from terrace.domain import errors
from terrace.web.deps import ContainerDep
from terrace.web.errors import status_of
from terrace.web.ui.session import CheckedFormDep, SessionDep, render

router = APIRouter(prefix="/app", include_in_schema=False)
HEALTH = "/{organization}/workspaces/{name}/health"


def _health_page(request: Request, container: Any, session: Any, organization: str, name: str, **extra: Any) -> Any:
    report = container.health_pages.report(session.principal, organization, name)
    return render(request, "workspace_health.html", session, organization=organization, ws=report.ws, report=report,
                  **extra)  # fmt: skip


@router.get(HEALTH)
def health_page(request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str) -> Any:
    return _health_page(request, container, session, organization, name)


@router.post(HEALTH + "/{action}")
def health_action(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str, action: str,
    form: CheckedFormDep,
) -> Any:  # fmt: skip
    """`settings` turns assessments on or off (the form's `enabled`), `assess` starts one now."""
    if action not in ("settings", "assess"):
        raise errors.NotFound(f"no health action {action}")
    try:
        if action == "settings":
            container.health_pages.set_enabled(session.principal, organization, name, form.get("enabled") == "on")
        else:
            container.health_pages.start_now(session.principal, organization, name)
    except (errors.Conflict, errors.Invalid, errors.Forbidden) as exc:
        return _health_page(request, container, session, organization, name, status=status_of(exc), error=exc.detail)
    done = "saved" if action == "settings" else "started"
    return RedirectResponse(f"/app/{organization}/workspaces/{name}/health?{done}=1", status_code=303)
