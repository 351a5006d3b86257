"""Variable sets in the UI: an organization's sets (list, create), a set's page (its settings, its variables,
the workspaces and projects it applies to), and a workspace's effective variables with their sources."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from terrace.domain import errors
from terrace.domain.varsets import VarsetView
from terrace.web.deps import ContainerDep
from terrace.web.errors import status_of
from terrace.web.ui.session import CheckedFormDep, SessionDep, field_of, render
from terrace.web.ui.variables import variable_attributes

router = APIRouter(prefix="/app", include_in_schema=False)
FORM_ERRORS = (errors.Invalid, errors.Conflict, errors.NotFound, errors.Forbidden)


def _set_attributes(form: dict[str, str]) -> dict[str, Any]:
    return {
        "name": form.get("name", "").strip(),
        "description": form.get("description", ""),
        "global": form.get("global") == "on",
        "priority": form.get("priority") == "on",
    }


@router.get("/{organization}/varsets")
def varsets_page(request: Request, container: ContainerDep, session: SessionDep, organization: str) -> Any:
    views = container.varset_views.of_organization(session.principal, organization, request.query_params.get("q"))
    return render(request, "varsets.html", session, organization=organization, views=views, form={})


@router.post("/{organization}/varsets")
def create_varset(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, form: CheckedFormDep
) -> Any:
    try:
        vs = container.set_variables.create_set(session.principal, organization, _set_attributes(form), [], [], [])
    except FORM_ERRORS as exc:
        views = container.varset_views.of_organization(session.principal, organization, None)
        return render(request, "varsets.html", session, status=422, organization=organization, views=views,
                      form=form, error=exc.detail, error_field=field_of(exc))  # fmt: skip
    return RedirectResponse(f"/app/{organization}/varsets/{vs.id}", status_code=303)


def _view(container: Any, session: Any, organization: str, varset_id: str) -> VarsetView:
    view: VarsetView = container.varset_views.get(session.principal, varset_id, frozenset({"workspaces", "projects"}))
    if view.organization_name != organization:
        raise errors.NotFound(f"variable set {varset_id} not found")
    return view


def _set_page(request: Request, container: Any, session: Any, organization: str, varset_id: str, **extra: Any) -> Any:
    view = _view(container, session, organization, varset_id)
    workspaces, projects = container.varset_views.choices(session.principal, organization)
    vs = view.varset
    context = {
        "organization": organization,
        "view": view,
        "vs": vs,
        "settings": {"name": vs.name, "description": vs.description, "global": vs.global_, "priority": vs.priority},
        "workspaces": [ws for ws in workspaces if ws.id not in vs.workspace_ids],
        "projects": [p for p in projects if p.id not in vs.project_ids],
        "form": {},
        "var": None,
    }
    return render(request, "varset.html", session, **{**context, **extra})


@router.get("/{organization}/varsets/{varset_id}")
def varset_page(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, varset_id: str
) -> Any:
    return _set_page(request, container, session, organization, varset_id)


def _back(organization: str, varset_id: str) -> RedirectResponse:
    return RedirectResponse(f"/app/{organization}/varsets/{varset_id}", status_code=303)


@router.post("/{organization}/varsets/{varset_id}")
def update_varset(
    request: Request,
    container: ContainerDep,
    session: SessionDep,
    organization: str,
    varset_id: str,
    form: CheckedFormDep,
) -> Any:
    _view(container, session, organization, varset_id)
    try:
        container.varsets.update(session.principal, varset_id, _set_attributes(form))
    except FORM_ERRORS as exc:
        return _set_page(request, container, session, organization, varset_id, status=422, settings_error=exc.detail)
    return _back(organization, varset_id)


@router.post("/{organization}/varsets/{varset_id}/delete")
def delete_varset(
    container: ContainerDep, session: SessionDep, organization: str, varset_id: str, form: CheckedFormDep
) -> Any:
    _view(container, session, organization, varset_id)
    container.varsets.delete(session.principal, varset_id)
    return RedirectResponse(f"/app/{organization}/varsets", status_code=303)


@router.post("/{organization}/varsets/{varset_id}/variables")
def create_set_variable(
    request: Request,
    container: ContainerDep,
    session: SessionDep,
    organization: str,
    varset_id: str,
    form: CheckedFormDep,
) -> Any:
    _view(container, session, organization, varset_id)
    try:
        container.set_variables.create(session.principal, varset_id, variable_attributes(form))
    except FORM_ERRORS as exc:
        kept = {k: v for k, v in form.items() if k != "value"}  # a rejected value is never echoed back
        return _set_page(request, container, session, organization, varset_id, status=422, form=kept,
                         error=exc.detail, error_field=field_of(exc))  # fmt: skip
    return _back(organization, varset_id)


def _edit_page(request: Request, session: Any, organization: str, view: VarsetView, var: Any, form: Any,
               **extra: Any) -> Any:  # fmt: skip
    return render(request, "varset_variable_edit.html", session, organization=organization, vs=view.varset, var=var,
                  form=form, **extra)  # fmt: skip


@router.get("/{organization}/varsets/{varset_id}/variables/{var_id}")
def edit_set_variable_page(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, varset_id: str, var_id: str
) -> Any:
    view = _view(container, session, organization, varset_id)
    var = container.set_variables.get(session.principal, varset_id, var_id)
    form = {"key": var.key, "value": var.value or "", "category": var.category, "description": var.description,
            "hcl": "on" if var.hcl else "", "sensitive": "on" if var.sensitive else ""}  # fmt: skip
    return _edit_page(request, session, organization, view, var, form)


@router.post("/{organization}/varsets/{varset_id}/variables/{var_id}")
def update_set_variable(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, varset_id: str, var_id: str,
    form: CheckedFormDep,
) -> Any:  # fmt: skip
    """The API's PATCH through the form, as a workspace variable's: a sensitive variable stays sensitive, and a
    blank value keeps its value."""
    view = _view(container, session, organization, varset_id)
    var = container.set_variables.get(session.principal, varset_id, var_id)
    attrs = variable_attributes(form)
    attrs["sensitive"] = attrs["sensitive"] or var.sensitive
    if var.sensitive and not attrs["value"]:
        del attrs["value"]  # write-only: the form never shows it, so blank means "keep"
    try:
        container.set_variables.update(session.principal, varset_id, var_id, attrs)
    except FORM_ERRORS as exc:
        kept = {k: v for k, v in form.items() if k != "value" or not attrs["sensitive"]}
        return _edit_page(request, session, organization, view, var, kept, status=status_of(exc), error=exc.detail,
                          error_field=field_of(exc))  # fmt: skip
    return _back(organization, varset_id)


@router.post("/{organization}/varsets/{varset_id}/variables/{var_id}/delete")
def delete_set_variable(
    container: ContainerDep, session: SessionDep, organization: str, varset_id: str, var_id: str, form: CheckedFormDep
) -> Any:
    _view(container, session, organization, varset_id)
    container.set_variables.delete(session.principal, varset_id, var_id)
    return _back(organization, varset_id)


@router.post("/{organization}/varsets/{varset_id}/{how}")
def apply_varset(
    request: Request,
    container: ContainerDep,
    session: SessionDep,
    organization: str,
    varset_id: str,
    how: str,
    form: CheckedFormDep,
) -> Any:
    """Apply the set to (`apply`), or remove it from (`remove`), one workspace or project."""
    kind = form.get("kind", "")
    if how not in ("apply", "remove") or kind not in ("workspaces", "projects"):
        raise errors.NotFound("no such action")
    _view(container, session, organization, varset_id)
    try:
        container.varsets.apply(session.principal, varset_id, kind, [form.get("id", "")], add=how == "apply")
    except FORM_ERRORS as exc:
        return _set_page(request, container, session, organization, varset_id, status=422, apply_error=exc.detail)
    return _back(organization, varset_id)


@router.get("/{organization}/workspaces/{name}/effective-variables")
def effective_variables(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str
) -> Any:
    ws = container.workspaces.get_by_name(session.principal, organization, name)
    found = container.effective_variables.all_vars(session.principal, ws)
    return render(request, "effective_variables.html", session, organization=organization, ws=ws, variables=found)
