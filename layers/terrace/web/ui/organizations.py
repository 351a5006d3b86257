"""Organizations and the workspaces list (search, tags, lock state, resource count)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from terrace.domain.projects import default_project_id
from terrace.domain.runs import Run
from terrace.domain.workspace import Workspace
from terrace.web.deps import ContainerDep
from terrace.web.ui import run_labels
from terrace.web.ui.session import SessionDep, render

router = APIRouter(prefix="/app", include_in_schema=False)
# Included after every other router (web/app.py): a catch of one path segment must not shadow another page's.
redirects = APIRouter(include_in_schema=False)


@redirects.get("/")
def root() -> RedirectResponse:
    """The server's address goes to the UI (the list of your organizations and their workspaces)."""
    return RedirectResponse("/app", status_code=303)


@redirects.get("/app/{organization}")
def organization_home(organization: str) -> RedirectResponse:
    """An organization's address goes to its workspace list (whose page checks the organization and the caller)."""
    return RedirectResponse(f"/app/{organization}/workspaces", status_code=303)


@router.get("")
def organizations(request: Request, container: ContainerDep, session: SessionDep) -> Any:
    orgs = container.organizations.list(session.principal)
    invited = [m for m in container.memberships.own(session.principal) if m.status == "invited"]
    invitations = [(m, container.organizations.name_of(m.organization)) for m in invited]
    return render(request, "organizations.html", session, organizations=orgs, invitations=invitations)


@router.get("/{organization}/workspaces")
def workspaces(
    request: Request,
    container: ContainerDep,
    session: SessionDep,
    organization: str,
    search: str = "",
    tag: str = "",
    status: str = "",
    sort: str = "name",
    project: str = "",
) -> Any:
    tags = [t.strip() for t in tag.split(",") if t.strip()]
    found = container.workspaces.list(session.principal, organization, search=search or None, tags=tags or None)
    projects = _projects_of(container, found)
    if project:
        found = [ws for ws in found if _project_id(ws) == project]
    current = container.run_queries.current_of(session.principal, found)
    rows = [Row(ws, current.get(ws.id)) for ws in found]
    counts = Counter(row.status.group for row in rows)
    if status in run_labels.GROUPS:
        rows = [row for row in rows if row.status.group == status]
    if sort == "changed":
        rows.sort(key=lambda row: row.changed_at, reverse=True)
    return render(
        request,
        "workspaces.html",
        session,
        organization=organization,
        rows=rows,
        search=search,
        tag=tag,
        status_filter=status if status in run_labels.GROUPS else "",
        sort="changed" if sort == "changed" else "name",
        groups=run_labels.GROUPS,
        counts=counts,
        projects=projects,
        project_filter=project,
    )


def _project_id(ws: Workspace) -> str:
    return ws.project_id or default_project_id(ws.organization)


def _projects_of(container: Any, found: list[Workspace]) -> dict[str, str]:
    """project id -> name of the projects the listed workspaces are in (one read per project, not per row)."""
    one_each = {_project_id(ws): ws for ws in found}
    names = {pid: container.workspaces.project_name_of(ws) for pid, ws in one_each.items()}
    return dict(sorted(names.items(), key=lambda item: item[1].lower()))


@dataclass(frozen=True)
class Row:
    """A workspace in the list, with the run its status is (`domain/runs.py: current_of`; None: none, or the
    caller may not read runs)."""

    ws: Workspace
    run: Run | None

    @property
    def status(self) -> run_labels.RunStatus:
        return run_labels.describe(self.run)

    @property
    def changed_at(self) -> str:
        """When it last changed: its run's latest status, else the workspace's own update."""
        stamps = list(self.run.status_timestamps.values()) if self.run else []
        return max([*stamps, self.ws.updated_at])
