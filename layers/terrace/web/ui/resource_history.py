"""A resource's history, linked from the resource search: every state version of its workspace in which the
resource at an address changed, with its attribute changes, a bounded page at a time (`ResourceHistory`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from terrace.web.deps import ContainerDep
from terrace.web.ui.session import SessionDep, render

router = APIRouter(include_in_schema=False)  # included by web/ui/search.py under /app


@router.get("/{organization}/workspaces/{name}/resources/history")
def resource_history(
    request: Request,
    container: ContainerDep,
    session: SessionDep,
    organization: str,
    name: str,
    address: str = "",
    before: str = "",
) -> Any:
    history = container.resource_history.page(session.principal, organization, name, address, before or None)
    return render(
        request, "resource_history.html", session, organization=organization, ws=history.workspace, history=history
    )
