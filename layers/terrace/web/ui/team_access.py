"""A workspace's "Team access" settings tab (grant a team read, plan, write, admin or custom access, change it,
remove it) through `TeamAccessService`, as the API's `/team-workspaces`; its form helpers serve the project
page's team access too (`web/ui/projects.py`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from terrace.domain import errors
from terrace.services.access.permissions import FIELD_CHOICES, PROJECT_LEVELS, WORKSPACE_LEVELS
from terrace.services.access.team_access import PROJECT_ACCESS_CHOICES, PROJECT_WS_CHOICES
from terrace.web.audit_trail import note_action
from terrace.web.deps import ContainerDep
from terrace.web.errors import status_of
from terrace.web.ui.session import CheckedFormDep, SessionDep, render

router = APIRouter(prefix="/app", include_in_schema=False)
PAGE = "/{organization}/workspaces/{name}/access"
FORM_ERRORS = (errors.Invalid, errors.Conflict, errors.Forbidden, errors.NotFound)
# The custom fields of each kind of grant, by the attribute that holds them ("" for the grant's own attributes).
CUSTOM: dict[str, dict[str, dict[str, tuple[Any, ...]]]] = {
    "workspace": {"": FIELD_CHOICES},
    "project": {"project-access": PROJECT_ACCESS_CHOICES, "workspace-access": PROJECT_WS_CHOICES},
}
LEVELS = {"workspace": WORKSPACE_LEVELS, "project": PROJECT_LEVELS}


def access_attributes(form: dict[str, str], kind: str) -> dict[str, Any]:
    """The grant's attributes a form stands for: its level, and with `custom` each field the form names
    (`<group>.<field>`; a checkbox for a true/false field)."""
    access = form.get("access", "")
    attributes: dict[str, Any] = {"access": access}
    if access != "custom":
        return attributes
    for group, choices in CUSTOM[kind].items():
        values: dict[str, Any] = {}
        for key, options in choices.items():
            field = f"{group}.{key}"
            if isinstance(options[0], bool):
                values[key] = form.get(field) == "on"
            elif form.get(field):
                values[key] = form[field]
        attributes.update(values) if not group else attributes.update({group: values})
    return attributes


def custom_values(grant: Any) -> dict[str, Any]:
    """A grant's current custom fields as the form names them (empty for a fixed level)."""
    if grant.access != "custom":
        return {}
    if grant.kind == "workspace":
        return {f".{key}": value for key, value in grant.workspace_fields.items()}
    return {f"{group}.{key}": value for group in ("project-access", "workspace-access")
            for key, value in (grant.fields.get(group) or {}).items()}  # fmt: skip


def context(kind: str) -> dict[str, Any]:
    return {"kind": kind, "levels": LEVELS[kind], "custom": CUSTOM[kind], "custom_values": custom_values}


def _page(request: Request, container: Any, session: Any, organization: str, name: str, **extra: Any) -> Any:
    ws = container.workspaces.get_by_name(session.principal, organization, name)
    access = container.team_access.workspace_page(session.principal, ws.id)
    return render(request, "workspace_access.html", session, organization=organization, ws=ws, access=access,
                  **context("workspace"), **extra)  # fmt: skip


@router.get(PAGE)
def access_page(request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str) -> Any:
    return _page(request, container, session, organization, name)


def _done(organization: str, name: str, what: str) -> RedirectResponse:
    return RedirectResponse(f"/app/{organization}/workspaces/{name}/access?{what}=1", status_code=303)


@router.post(PAGE)
def add_access(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str, form: CheckedFormDep
) -> Any:
    ws = container.workspaces.get_by_name(session.principal, organization, name)
    try:
        container.team_access.add_workspace(
            session.principal, form.get("team_id", ""), ws.id, access_attributes(form, "workspace")
        )
    except FORM_ERRORS as exc:
        status = 422 if isinstance(exc, errors.NotFound) else status_of(exc)
        return _page(request, container, session, organization, name, status=status, error=exc.detail, form=form)
    return _done(organization, name, "added")


@router.post(PAGE + "/{grant_id}")
def change_access(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str, grant_id: str,
    form: CheckedFormDep,
) -> Any:  # fmt: skip
    """Change a grant's level (`action=update`) or remove it (`action=remove`)."""
    ws = container.workspaces.get_by_name(session.principal, organization, name)
    grant = container.team_access.get(session.principal, grant_id, "workspace")
    if grant.target_id != ws.id:
        raise errors.NotFound(f"team access {grant_id} not found")
    note_action(request, "delete" if form.get("action") == "remove" else "update")  # its audit event's verb
    try:
        if form.get("action") == "remove":
            container.team_access.remove(session.principal, grant.id, "workspace")
            return _done(organization, name, "removed")
        container.team_access.update(session.principal, grant.id, "workspace", access_attributes(form, "workspace"))
    except FORM_ERRORS as exc:
        return _page(request, container, session, organization, name, status=status_of(exc), error=exc.detail,
                     error_grant=grant.id)  # fmt: skip
    return _done(organization, name, "changed")
