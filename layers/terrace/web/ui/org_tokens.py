"""An organization's API tokens page: its organization token (create or regenerate, revoke) and its teams'
tokens (create with a description and an expiry, list, revoke), through the services the API's
`/organizations/:org/authentication-token`, `/teams/:id/authentication-tokens` and `/authentication-tokens/:id`
use, with their checks: the organization token is its owners', a team's tokens are whoever manages them
(`Authorizer.require_team_tokens`). A new secret is shown once, handed over as the account tokens page does
(`web/ui/tokens.py`: a redirect and a flash cookie, never the URL)."""

from __future__ import annotations

import re
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from terrace.domain import errors
from terrace.web.deps import ContainerDep
from terrace.web.errors import status_of
from terrace.web.ui.session import CheckedFormDep, SessionDep, render
from terrace.web.ui.tokens import redirect_with_secret, shown_once

router = APIRouter(prefix="/app", include_in_schema=False)
PAGE = "/{organization}/settings/tokens"
FORM_ERRORS = (errors.Invalid, errors.Conflict, errors.Forbidden, errors.NotFound)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _path(organization: str) -> str:
    return f"/app/{organization}/settings/tokens"


def expired_at(form: dict[str, str]) -> str | None:
    """The form's expiry date (`YYYY-MM-DD`, the date input's value) as the API's `expired-at`: that day's
    start, UTC; None (the default expiry) when blank."""
    day = form.get("expires_on", "").strip()
    if not day:
        return None
    if not _DATE.fullmatch(day):
        raise errors.Invalid("the expiry is a date, YYYY-MM-DD", pointer="/data/attributes/expired-at")
    return f"{day}T00:00:00Z"


def _page(request: Request, container: Any, session: Any, organization: str, status: int = 200,
          **extra: Any) -> Any:  # fmt: skip
    principal = session.principal
    team_tokens = container.team_tokens.of_organization(principal, organization)  # NotFound: not a member
    teams = sorted(container.team_tokens.manageable_teams(principal, organization), key=lambda t: t.name.lower())
    org_token, can_manage = None, True
    try:
        org_token = container.service_tokens.organization_token(principal, organization)
    except errors.NotFound:
        pass  # none yet
    except errors.Forbidden:
        can_manage = False
    return render(request, "org_tokens.html", session, status=status, organization=organization,
                  org_tab="/settings", org_token=org_token, can_manage=can_manage, team_tokens=team_tokens,
                  teams=teams, team_names={t.id: t.name for t in teams}, **{"form": {}, **extra})  # fmt: skip


@router.get(PAGE)
def tokens_page(request: Request, container: ContainerDep, session: SessionDep, organization: str) -> Any:
    return shown_once(request, container, session, _path(organization),
                      lambda secret: _page(request, container, session, organization, new_secret=secret))  # fmt: skip


@router.post(PAGE + "/organization")
def create_organization_token(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, form: CheckedFormDep
) -> Any:
    """Create the organization token, replacing the one it had."""
    try:
        issued = container.service_tokens.create_organization_token(session.principal, organization, expired_at(form))
    except FORM_ERRORS as exc:
        return _page(request, container, session, organization, status=status_of(exc), org_error=exc.detail)
    return redirect_with_secret(container, session, issued.secret, _path(organization), "#organization-token")


@router.post(PAGE + "/organization/revoke")
def revoke_organization_token(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, form: CheckedFormDep
) -> Any:
    try:
        container.service_tokens.delete_organization_token(session.principal, organization)
    except FORM_ERRORS as exc:
        return _page(request, container, session, organization, status=status_of(exc), org_error=exc.detail)
    return RedirectResponse(_path(organization) + "?revoked=1#organization-token", status_code=303)


@router.post(PAGE + "/teams")
def create_team_token(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, form: CheckedFormDep
) -> Any:
    """A described token of one of the teams whose tokens the caller manages."""
    try:
        attributes = {"description": form.get("description", "").strip(), "expired-at": expired_at(form)}
        teams = {t.id for t in container.team_tokens.manageable_teams(session.principal, organization)}
        if form.get("team_id", "") not in teams:
            raise errors.Invalid("choose one of the teams listed", pointer="/data/relationships/team")
        issued = container.team_tokens.create(session.principal, form["team_id"], attributes)
    except FORM_ERRORS as exc:
        return _page(request, container, session, organization, status=status_of(exc), team_error=exc.detail,
                     form=form)  # fmt: skip
    return redirect_with_secret(container, session, issued.secret, _path(organization), "#team-tokens")


@router.post(PAGE + "/{token_id}/revoke")
def revoke_team_token(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, token_id: str,
    form: CheckedFormDep,
) -> Any:  # fmt: skip
    """Revoke a token of one of the organization's teams (any other token is not found here)."""
    listed = {t.id for t in container.team_tokens.of_organization(session.principal, organization)}
    if token_id not in listed:
        raise errors.NotFound(f"authentication token {token_id[:64]} not found")
    container.team_tokens.revoke(session.principal, token_id)
    return RedirectResponse(_path(organization) + "?revoked=1#team-tokens", status_code=303)
