"""An organization's settings page (name, e-mail, default execution mode, cost estimation and the other settings
the API's PATCH takes) through `OrganizationService.update`: owners change them, members see them."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from terrace.domain import errors
from terrace.domain.organizations import Organization
from terrace.domain.workspace import EXECUTION_MODES
from terrace.services.access.authz import Action
from terrace.web.deps import ContainerDep
from terrace.web.errors import status_of
from terrace.web.ui.session import CheckedFormDep, SessionDep, field_of, render

router = APIRouter(prefix="/app", include_in_schema=False)
PAGE = "/{organization}/settings"


def _form_of(org: Organization) -> dict[str, Any]:
    return {
        "name": org.name,
        "email": org.email,
        "default_execution_mode": org.default_execution_mode,
        "cost_estimation_enabled": "on" if org.cost_estimation_enabled else "",
        "allow_force_delete_workspaces": "on" if org.allow_force_delete_workspaces else "",
    }


def _attributes(form: dict[str, str]) -> dict[str, Any]:
    """The PATCH attributes the form stands for. The session settings are the API's alone: kept and returned to
    clients as HCP Terraform does, they change none of Terrace's web sessions, so the page does not offer them."""
    return {
        "name": form.get("name", "").strip(),
        "email": form.get("email", "").strip(),
        "default-execution-mode": form.get("default_execution_mode", ""),
        "cost-estimation-enabled": form.get("cost_estimation_enabled") == "on",
        "allow-force-delete-workspaces": form.get("allow_force_delete_workspaces") == "on",
    }


def _page(request: Request, session: Any, org: Organization, can_manage: bool, status: int = 200, **extra: Any) -> Any:
    extra["form"] = extra.get("form") or _form_of(org)
    return render(request, "org_settings.html", session, status=status, organization=org.name, org=org,
                  can_manage=can_manage, modes=EXECUTION_MODES, org_tab="/settings", **extra)  # fmt: skip


@router.get(PAGE)
def organization_settings(request: Request, container: ContainerDep, session: SessionDep, organization: str) -> Any:
    org = container.organizations.settings(session.principal, organization)
    return _page(request, session, org, container.authz.can(session.principal, Action.MANAGE_ORGANIZATION, org.view))


@router.post(PAGE)
def update_organization(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, form: CheckedFormDep
) -> Any:
    """Save the settings; a new name moves the organization's pages (and API paths) to it at once."""
    try:
        org = container.organizations.update(session.principal, organization, _attributes(form))
    except (errors.Invalid, errors.Conflict, errors.Forbidden) as exc:
        org = container.organizations.get(session.principal, organization)
        can_manage = container.authz.can(session.principal, Action.MANAGE_ORGANIZATION, org.view)
        return _page(request, session, org, can_manage, status=status_of(exc), form=form if can_manage else None,
                     error=exc.detail, error_field=field_of(exc))  # fmt: skip
    renamed = "&renamed=" + organization if org.name != organization else ""
    return RedirectResponse(f"/app/{org.name}/settings?saved=1{renamed}", status_code=303)
