"""Organizations and the workspaces list (search, tags, lock state, resource count)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from terrace.web.deps import ContainerDep
from terrace.web.ui.session import SessionDep, render

router = APIRouter(prefix="/app", include_in_schema=False)


@router.get("")
def organizations(request: Request, container: ContainerDep, session: SessionDep) -> Any:
    orgs = container.organizations.list(session.principal)
    return render(request, "organizations.html", session, organizations=orgs)


@router.get("/{organization}/workspaces")
def workspaces(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, search: str = "", tag: str = ""
) -> Any:
    tags = [t.strip() for t in tag.split(",") if t.strip()]
    found = container.workspaces.list(session.principal, organization, search=search or None, tags=tags or None)
    latest = container.run_queries.latest_of(session.principal, found)
    return render(
        request,
        "workspaces.html",
        session,
        organization=organization,
        workspaces=found,
        latest=latest,
        search=search,
        tag=tag,
    )
