"""An organization's members in the UI: its memberships and pending invitations, inviting by e-mail address (an
address an account was created with invites that account, not a new one) and removing; and, for the invited
person, accepting or declining an invitation (listed on their Organizations page). Through the membership
service's own checks: only who may manage membership invites and removes, only the invitee accepts or declines."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from terrace.domain import errors
from terrace.web.deps import ContainerDep
from terrace.web.errors import status_of
from terrace.web.ui.session import CheckedFormDep, SessionDep, field_of, render

router = APIRouter(prefix="/app", include_in_schema=False)
MEMBERS = "/{organization}/members"
FORM_ERRORS = (errors.Invalid, errors.Conflict, errors.Forbidden, errors.TooManyRequests)


def _members_page(request: Request, container: Any, session: Any, organization: str, **extra: Any) -> Any:
    view = container.access_documents.members_page(session.principal, organization)
    return render(request, "members.html", session, organization=organization, view=view, org_tab="/members",
                  **{"form": {}, **extra})  # fmt: skip


@router.get(MEMBERS)
def members_page(request: Request, container: ContainerDep, session: SessionDep, organization: str) -> Any:
    return _members_page(request, container, session, organization)


@router.post(MEMBERS)
def invite(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, form: CheckedFormDep
) -> Any:
    email = form.get("email", "").strip()
    try:
        container.memberships.invite(session.principal, organization, email)
    except FORM_ERRORS as exc:
        return _members_page(request, container, session, organization, status=status_of(exc), form=form,
                             error=exc.detail, error_field=field_of(exc))  # fmt: skip
    return RedirectResponse(f"/app/{organization}/members?invited={quote(email.lower())}", status_code=303)


@router.post(MEMBERS + "/{membership_id}/remove")
def remove(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, membership_id: str,
    form: CheckedFormDep,
) -> Any:  # fmt: skip
    view = container.access_documents.members_page(session.principal, organization)
    if not any(member.id == membership_id for member, _, _ in view.rows):  # of this organization only
        raise errors.NotFound(f"organization membership {membership_id} not found")
    try:
        container.memberships.delete(session.principal, membership_id)
    except FORM_ERRORS as exc:
        return _members_page(request, container, session, organization, status=status_of(exc),
                             remove_error=exc.detail)  # fmt: skip
    return RedirectResponse(f"/app/{organization}/members?removed=1", status_code=303)


@router.post("/account/invitations/{membership_id}/{answer}")
def answer_invitation(
    container: ContainerDep, session: SessionDep, membership_id: str, answer: str, form: CheckedFormDep
) -> Any:
    """The invitee accepts (and lands in the organization) or declines (back to their organizations)."""
    if answer not in ("accept", "decline"):
        raise errors.NotFound(f"no invitation action {answer}")
    if answer == "accept":
        member = container.memberships.accept(session.principal, membership_id)
        name = container.organizations.name_of(member.organization)
        return RedirectResponse(f"/app/{name}/workspaces?joined=1", status_code=303)
    member = container.memberships.decline(session.principal, membership_id)
    return RedirectResponse(f"/app?declined={quote(container.organizations.name_of(member.organization))}",
                            status_code=303)  # fmt: skip
