"""Workspace variables: list, create and delete; sensitive values are write-only (never rendered)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from terrace.domain import errors
from terrace.web.deps import ContainerDep
from terrace.web.ui.session import CheckedFormDep, SessionDep, render

router = APIRouter(prefix="/app", include_in_schema=False)


def _page(request: Request, container: Any, session: Any, organization: str, ws: Any, **extra: Any) -> Any:
    variables = container.variables.list(session.principal, ws)
    return render(request, "variables.html", session, organization=organization, ws=ws, variables=variables, **extra)


@router.get("/{organization}/workspaces/{name}/variables")
def variables(request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str) -> Any:
    ws = container.workspaces.get_by_name(session.principal, organization, name)
    return _page(request, container, session, organization, ws, form={})


@router.post("/{organization}/workspaces/{name}/variables")
def create_variable(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str, form: CheckedFormDep
) -> Any:
    ws = container.workspaces.get_by_name(session.principal, organization, name)
    attrs = {
        "key": form.get("key", "").strip(),
        "value": form.get("value", ""),
        "category": form.get("category", "terraform"),
        "sensitive": form.get("sensitive") == "on",
        "hcl": form.get("hcl") == "on",
        "description": form.get("description", ""),
    }
    try:
        container.variables.create(session.principal, ws, attrs)
    except (errors.Invalid, errors.Conflict) as exc:
        kept = {k: v for k, v in form.items() if k != "value"}  # a rejected value is never echoed back
        return _page(request, container, session, organization, ws, status=422, form=kept, error=exc.detail)
    return RedirectResponse(f"/app/{organization}/workspaces/{name}/variables", status_code=303)


@router.post("/{organization}/workspaces/{name}/variables/{var_id}/delete")
def delete_variable(
    container: ContainerDep, session: SessionDep, organization: str, name: str, var_id: str, form: CheckedFormDep
) -> Any:
    ws = container.workspaces.get_by_name(session.principal, organization, name)
    container.variables.delete(session.principal, ws, var_id)
    return RedirectResponse(f"/app/{organization}/workspaces/{name}/variables", status_code=303)
