"""The explorer's page: pick a view (workspaces, terraform versions, providers, modules), filter it by up to three
conditions, sort it by a column and download it as CSV. Its form speaks in plain parameters (`f0`/`o0`/`v0`...),
turned here into the API's query (`domain/explorer_query.py`); the rows come from the same service as the API's.
Those who may make change requests get a form under the workspaces view: a change request on every workspace the
query finds (the API's bulk action), then the page again with how many it reached."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from terrace.domain import errors
from terrace.domain.change_requests import subject_and_message
from terrace.domain.explorer import FIELDS, WORKSPACES
from terrace.domain.explorer_query import OPERATORS, Query, parse
from terrace.web.deps import ContainerDep
from terrace.web.explorer_csv import to_csv
from terrace.web.ui.session import CheckedFormDep, SessionDep, render

router = APIRouter(prefix="/app", include_in_schema=False)
ROWS = 3  # filter rows on the form
SHOWN_MAX = 200
VIEWS = {"workspaces": "Workspaces", "tf_versions": "Terraform versions", "providers": "Providers",
         "modules": "Modules"}  # fmt: skip
UI_COLUMNS = {WORKSPACES: ("workspace_name", "project_name", "workspace_terraform_version", "current_run_status",
                           "drifted", "checks_failed", "resource_count", "providers", "modules",
                           "workspace_updated_at")}  # fmt: skip
OPERATOR_LABELS = {"is": "is", "is_not": "is not", "contains": "contains", "does_not_contain": "does not contain",
                   "is_empty": "is empty", "is_not_empty": "is not empty", "gt": "greater than", "lt": "less than",
                   "gteq": "at least", "lteq": "at most", "is_before": "is before", "is_after": "is after"}  # fmt: skip


def _form(params: Mapping[str, str]) -> dict[str, str]:
    form = {"type": params.get("type") or WORKSPACES, "sort": params.get("sort", "")[:200]}
    for n in range(ROWS):
        for part in ("f", "o", "v"):
            form[f"{part}{n}"] = params.get(f"{part}{n}", "")[:256]
    return form


def _query(form: dict[str, str]) -> Query:
    pairs = [("type", form["type"]), ("sort", form["sort"])]
    for n in range(ROWS):
        field, operator, value = form[f"f{n}"], form[f"o{n}"], form[f"v{n}"]
        if field and operator and (value or operator in ("is_empty", "is_not_empty")):
            pairs.append((f"filter[{n}][{field}][{operator}][0]", value))
    return parse(pairs)


@router.get("/{organization}/explorer")
def explorer(request: Request, container: ContainerDep, session: SessionDep, organization: str) -> Any:
    container.organizations.get(session.principal, organization)
    form = _form(request.query_params)
    problem, rows, query = "", [], Query()
    try:
        query = _query(form)
        rows = container.explorer.query(session.principal, organization, query)
    except errors.BadRequest as exc:
        problem = exc.detail
    view = form["type"] if form["type"] in FIELDS else WORKSPACES
    link = lambda **change: "?" + urlencode({k: v for k, v in {**form, **change}.items() if v})  # noqa: E731
    made = request.query_params.get("made", "")
    offer = view == WORKSPACES and bool(rows)
    offer = offer and container.explorer.may_request_changes(session.principal, organization)
    return render(
        request, "explorer.html", session, status=400 if problem else 200, organization=organization,
        org_tab="/explorer", form=form, views=VIEWS, view=view, fields=list(FIELDS[view]), rows=rows[:SHOWN_MAX],
        total=len(rows), columns=UI_COLUMNS.get(view, tuple(FIELDS[view])), problem=problem,
        operators=[(op, OPERATOR_LABELS[op]) for op in OPERATORS], filter_rows=range(ROWS), link=link,
        csv_link=f"/app/{organization}/explorer.csv{link()}", offer_change_request=offer,
        made=int(made) if made.isdigit() and len(made) <= 6 else None,
    )  # fmt: skip


@router.post("/{organization}/explorer/change-requests")
def make_change_requests(container: ContainerDep, session: SessionDep, organization: str, form: CheckedFormDep) -> Any:
    """A change request (subject, message) on every workspace the page's query finds, then the page again."""
    query = _query(_form(form))
    subject, message = subject_and_message({"subject": form.get("subject", ""), "message": form.get("message", "")})
    made = container.explorer.change_requests(session.principal, organization, query, None, subject, message)
    back = urlencode({k: v for k, v in {**_form(form), "made": str(len(made))}.items() if v})
    return RedirectResponse(f"/app/{organization}/explorer?{back}", status_code=303)


@router.get("/{organization}/explorer.csv")
def explorer_csv(request: Request, container: ContainerDep, session: SessionDep, organization: str) -> Response:
    query = _query(_form(request.query_params))
    rows = container.explorer.query(session.principal, organization, query)
    return Response(
        to_csv(query, rows),
        media_type="text/csv; charset=utf-8",
        headers={
            "Content-Disposition": f'attachment; filename="{organization}-explorer-{query.type}.csv"',
            "X-Content-Type-Options": "nosniff",
        },
    )
