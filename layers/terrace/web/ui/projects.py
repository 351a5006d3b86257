"""Projects in the UI: an organization's projects with their workspaces (list, create), a project's page (rename,
delete while empty, its workspaces, its team access), through the project services and `ProjectDeletion` as
the API's `/projects` and `/team-projects`."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from terrace.domain import errors
from terrace.web.audit_trail import note_action
from terrace.web.deps import ContainerDep
from terrace.web.errors import status_of
from terrace.web.ui.session import CheckedFormDep, SessionDep, field_of, render
from terrace.web.ui.team_access import access_attributes, context

router = APIRouter(prefix="/app", include_in_schema=False)
PROJECTS = "/{organization}/projects"
PROJECT = PROJECTS + "/{project_id}"
FORM_ERRORS = (errors.Invalid, errors.Conflict, errors.Forbidden, errors.NotFound)


def _list_page(request: Request, container: Any, session: Any, organization: str, **extra: Any) -> Any:
    view = container.project_pages.of_organization(session.principal, organization)
    return render(request, "projects.html", session, organization=organization, view=view, org_tab="/projects",
                  **{"form": {}, **extra})  # fmt: skip


@router.get(PROJECTS)
def projects_page(request: Request, container: ContainerDep, session: SessionDep, organization: str) -> Any:
    return _list_page(request, container, session, organization)


@router.post(PROJECTS)
def create_project(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, form: CheckedFormDep
) -> Any:
    attributes = {"name": form.get("name", "").strip(), "description": form.get("description", "")}
    try:
        project = container.projects.create(session.principal, organization, attributes)
    except FORM_ERRORS as exc:
        return _list_page(request, container, session, organization, status=status_of(exc), form=form,
                          error=exc.detail, error_field=field_of(exc))  # fmt: skip
    return RedirectResponse(f"/app/{organization}/projects/{project.id}?created=1", status_code=303)


def _page(request: Request, container: Any, session: Any, organization: str, project_id: str, **extra: Any) -> Any:
    view = container.project_pages.read(session.principal, organization, project_id)
    return render(request, "project.html", session, organization=organization, view=view, project=view.project,
                  access=view.access, org_tab="/projects", **context("project"), **extra)  # fmt: skip


@router.get(PROJECT)
def project_page(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, project_id: str
) -> Any:
    return _page(request, container, session, organization, project_id)


def _done(organization: str, project_id: str, what: str) -> RedirectResponse:
    return RedirectResponse(f"/app/{organization}/projects/{project_id}?{what}=1", status_code=303)


@router.post(PROJECT)
def update_project(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, project_id: str,
    form: CheckedFormDep,
) -> Any:  # fmt: skip
    container.project_pages.read(session.principal, organization, project_id)  # of this organization
    attributes = {"name": form.get("name", "").strip(), "description": form.get("description", "")}
    try:
        container.projects.update(session.principal, project_id, attributes)
    except FORM_ERRORS as exc:
        return _page(request, container, session, organization, project_id, status=status_of(exc),
                     settings_error=exc.detail, error_field=field_of(exc))  # fmt: skip
    return _done(organization, project_id, "saved")


@router.post(PROJECT + "/delete")
def delete_project(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, project_id: str,
    form: CheckedFormDep,
) -> Any:  # fmt: skip
    view = container.project_pages.read(session.principal, organization, project_id)
    try:
        container.project_deletion.delete(session.principal, project_id)
    except FORM_ERRORS as exc:
        return _page(request, container, session, organization, project_id, status=status_of(exc),
                     delete_error=exc.detail)  # fmt: skip
    return RedirectResponse(f"/app/{organization}/projects?deleted={view.project.name}", status_code=303)


@router.post(PROJECT + "/access")
def add_access(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, project_id: str,
    form: CheckedFormDep,
) -> Any:  # fmt: skip
    container.project_pages.read(session.principal, organization, project_id)
    try:
        container.team_access.add_project(
            session.principal, form.get("team_id", ""), project_id, access_attributes(form, "project")
        )
    except FORM_ERRORS as exc:
        status = 422 if isinstance(exc, errors.NotFound) else status_of(exc)
        return _page(request, container, session, organization, project_id, status=status, error=exc.detail,
                     form=form)  # fmt: skip
    return _done(organization, project_id, "added")


@router.post(PROJECT + "/access/{grant_id}")
def change_access(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, project_id: str,
    grant_id: str, form: CheckedFormDep,
) -> Any:  # fmt: skip
    """Change a grant's level (`action=update`) or remove it (`action=remove`)."""
    container.project_pages.read(session.principal, organization, project_id)
    grant = container.team_access.get(session.principal, grant_id, "project")
    if grant.target_id != project_id:
        raise errors.NotFound(f"team access {grant_id} not found")
    note_action(request, "delete" if form.get("action") == "remove" else "update")  # its audit event's verb
    try:
        if form.get("action") == "remove":
            container.team_access.remove(session.principal, grant.id, "project")
            return _done(organization, project_id, "removed")
        container.team_access.update(session.principal, grant.id, "project", access_attributes(form, "project"))
    except FORM_ERRORS as exc:
        return _page(request, container, session, organization, project_id, status=status_of(exc),
                     error=exc.detail)  # fmt: skip
    return _done(organization, project_id, "changed")
