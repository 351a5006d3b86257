"""Workspace variables: list, create, edit and delete; sensitive values are write-only (never rendered)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from terrace.domain import errors
from terrace.web.deps import ContainerDep
from terrace.web.ui.session import CheckedFormDep, SessionDep, field_of, render

router = APIRouter(prefix="/app", include_in_schema=False)


def _page(request: Request, container: Any, session: Any, organization: str, ws: Any, **extra: Any) -> Any:
    variables = container.variables.list(session.principal, ws)
    return render(request, "variables.html", session, organization=organization, ws=ws, variables=variables, **extra)


def variable_attributes(form: dict[str, str]) -> dict[str, Any]:
    """A variable form's fields as the API's attributes (the variable sets' page uses them too)."""
    return {
        "key": form.get("key", "").strip(),
        "value": form.get("value", ""),
        "category": form.get("category", "terraform"),
        "sensitive": form.get("sensitive") == "on",
        "hcl": form.get("hcl") == "on",
        "description": form.get("description", ""),
    }


@router.get("/{organization}/workspaces/{name}/variables")
def variables(request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str) -> Any:
    ws = container.workspaces.get_by_name(session.principal, organization, name)
    return _page(request, container, session, organization, ws, form={})


@router.post("/{organization}/workspaces/{name}/variables")
def create_variable(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str, form: CheckedFormDep
) -> Any:
    ws = container.workspaces.get_by_name(session.principal, organization, name)
    try:
        container.variables.create(session.principal, ws, variable_attributes(form))
    except (errors.Invalid, errors.Conflict) as exc:
        kept = {k: v for k, v in form.items() if k != "value"}  # a rejected value is never echoed back
        return _page(
            request,
            container,
            session,
            organization,
            ws,
            status=422,
            form=kept,
            error=exc.detail,
            error_field=field_of(exc),
        )
    return RedirectResponse(f"/app/{organization}/workspaces/{name}/variables", status_code=303)


def _edit_page(request: Request, session: Any, organization: str, ws: Any, var: Any, form: Any, **extra: Any) -> Any:
    return render(request, "variable_edit.html", session, organization=organization, ws=ws, var=var, form=form, **extra)


@router.get("/{organization}/workspaces/{name}/variables/{var_id}")
def edit_variable_page(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str, var_id: str
) -> Any:
    ws = container.workspaces.get_by_name(session.principal, organization, name)
    var = container.variables.get(session.principal, ws, var_id)
    form = {"key": var.key, "value": var.value or "", "category": var.category, "description": var.description}
    form.update({"hcl": "on" if var.hcl else "", "sensitive": "on" if var.sensitive else ""})
    return _edit_page(request, session, organization, ws, var, form)


@router.post("/{organization}/workspaces/{name}/variables/{var_id}")
def update_variable(
    request: Request,
    container: ContainerDep,
    session: SessionDep,
    organization: str,
    name: str,
    var_id: str,
    form: CheckedFormDep,
) -> Any:
    """The API's PATCH through the form: a sensitive variable stays sensitive, and a blank value keeps its value."""
    ws = container.workspaces.get_by_name(session.principal, organization, name)
    var = container.variables.get(session.principal, ws, var_id)
    attrs = variable_attributes(form)
    attrs["sensitive"] = attrs["sensitive"] or var.sensitive
    if var.sensitive and not attrs["value"]:
        del attrs["value"]  # write-only: the form never shows it, so blank means "keep"
    try:
        container.variables.update(session.principal, ws, var_id, attrs)
    except (errors.Invalid, errors.Conflict) as exc:
        kept = {k: v for k, v in form.items() if k != "value" or not attrs["sensitive"]}
        return _edit_page(
            request, session, organization, ws, var, kept, status=422, error=exc.detail, error_field=field_of(exc)
        )
    return RedirectResponse(f"/app/{organization}/workspaces/{name}/variables", status_code=303)


@router.post("/{organization}/workspaces/{name}/variables/{var_id}/delete")
def delete_variable(
    container: ContainerDep, session: SessionDep, organization: str, name: str, var_id: str, form: CheckedFormDep
) -> Any:
    ws = container.workspaces.get_by_name(session.principal, organization, name)
    container.variables.delete(session.principal, ws, var_id)
    return RedirectResponse(f"/app/{organization}/workspaces/{name}/variables", status_code=303)
