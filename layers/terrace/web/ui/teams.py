"""Teams in the UI: an organization's teams (list, create), a team's page (its members added by username or
e-mail address and removed, its organization access and visibility, its deletion). Through the team services'
own permission checks: the owners team is never renamed, emptied, deleted or given less than everything."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from terrace.domain import errors
from terrace.domain.teams import VISIBILITIES
from terrace.services.access.permissions import ORG_ACCESS_KEYS
from terrace.web.deps import ContainerDep
from terrace.web.errors import status_of
from terrace.web.ui.session import CheckedFormDep, SessionDep, field_of, render

router = APIRouter(prefix="/app", include_in_schema=False)
TEAMS = "/{organization}/teams"
TEAM = TEAMS + "/{team_id}"
FORM_ERRORS = (errors.Invalid, errors.Conflict, errors.Forbidden, errors.NotFound, errors.TooManyRequests)


def _status(exc: errors.TerraceError) -> int:
    """A form's refusal: 422 for a name the form gave that matches nobody (the page itself was found)."""
    return 422 if isinstance(exc, errors.NotFound) else status_of(exc)


def _access(form: dict[str, str]) -> dict[str, bool]:
    return {key: form.get(key) == "on" for key in ORG_ACCESS_KEYS}


def _teams_page(request: Request, container: Any, session: Any, organization: str, **extra: Any) -> Any:
    documents = container.access_documents.of_organization(session.principal, organization).documents
    teams = sorted(documents, key=lambda d: (not d.team.owners, d.team.name.lower()))
    can_manage = bool(teams) and teams[0].can_manage  # who manages teams sees the owners team, always there
    return render(request, "teams.html", session, organization=organization, teams=teams, org_tab="/teams",
                  can_manage=can_manage,
                  access_keys=ORG_ACCESS_KEYS, visibilities=VISIBILITIES, **{"form": {}, **extra})  # fmt: skip


@router.get(TEAMS)
def teams_page(request: Request, container: ContainerDep, session: SessionDep, organization: str) -> Any:
    return _teams_page(request, container, session, organization)


@router.post(TEAMS)
def create_team(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, form: CheckedFormDep
) -> Any:
    attributes = {"name": form.get("name", "").strip(), "visibility": form.get("visibility", "organization"),
                  "organization-access": _access(form)}  # fmt: skip
    try:
        team = container.teams.create(session.principal, organization, attributes)
    except FORM_ERRORS as exc:
        return _teams_page(request, container, session, organization, status=_status(exc), form=form,
                           error=exc.detail, error_field=field_of(exc))  # fmt: skip
    return RedirectResponse(f"/app/{organization}/teams/{team.id}?created=1", status_code=303)


def _team_page(request: Request, container: Any, session: Any, organization: str, team_id: str, **extra: Any) -> Any:
    view = container.access_documents.team_page(session.principal, organization, team_id)
    return render(request, "team.html", session, organization=organization, view=view, team=view.team,
                  org_tab="/teams", access_keys=ORG_ACCESS_KEYS, visibilities=VISIBILITIES, **extra)  # fmt: skip


@router.get(TEAM)
def team_page(request: Request, container: ContainerDep, session: SessionDep, organization: str, team_id: str) -> Any:
    return _team_page(request, container, session, organization, team_id)


def _back(organization: str, team_id: str, what: str) -> RedirectResponse:
    return RedirectResponse(f"/app/{organization}/teams/{team_id}?{what}=1", status_code=303)


@router.post(TEAM)
def update_team(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, team_id: str,
    form: CheckedFormDep,
) -> Any:  # fmt: skip
    """Name, visibility and organization access as the API's PATCH (the owners team keeps its name and access)."""
    container.access_documents.team_page(session.principal, organization, team_id)  # of this organization
    attributes = {"name": form.get("name", "").strip(), "visibility": form.get("visibility", ""),
                  "organization-access": _access(form)}  # fmt: skip
    try:
        container.teams.update(session.principal, team_id, attributes)
    except FORM_ERRORS as exc:
        return _team_page(request, container, session, organization, team_id, status=_status(exc),
                          settings_error=exc.detail, error_field=field_of(exc))  # fmt: skip
    return _back(organization, team_id, "saved")


@router.post(TEAM + "/members")
def add_member(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, team_id: str,
    form: CheckedFormDep,
) -> Any:  # fmt: skip
    container.access_documents.team_page(session.principal, organization, team_id)
    try:
        container.team_members.add(session.principal, team_id, form.get("user", ""))
    except FORM_ERRORS as exc:
        return _team_page(request, container, session, organization, team_id, status=_status(exc),
                          member_error=exc.detail, member_form=form)  # fmt: skip
    return _back(organization, team_id, "added")


@router.post(TEAM + "/members/{user_id}/remove")
def remove_member(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, team_id: str, user_id: str,
    form: CheckedFormDep,
) -> Any:  # fmt: skip
    container.access_documents.team_page(session.principal, organization, team_id)
    try:
        container.team_members.remove(session.principal, team_id, user_id)
    except FORM_ERRORS as exc:
        return _team_page(request, container, session, organization, team_id, status=_status(exc),
                          member_error=exc.detail)  # fmt: skip
    return _back(organization, team_id, "removed")


@router.post(TEAM + "/delete")
def delete_team(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, team_id: str,
    form: CheckedFormDep,
) -> Any:  # fmt: skip
    view = container.access_documents.team_page(session.principal, organization, team_id)
    try:
        container.teams.delete(session.principal, team_id)  # its tokens and notifications go with it
    except FORM_ERRORS as exc:
        return _team_page(request, container, session, organization, team_id, status=_status(exc),
                          delete_error=exc.detail)  # fmt: skip
    return RedirectResponse(f"/app/{organization}/teams?deleted={view.team.name}", status_code=303)
