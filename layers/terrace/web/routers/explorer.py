"""/api/v2 explorer (HCP Terraform's explorer API): a view of the organization's workspaces, terraform versions,
providers or modules, filtered, sorted and paged (`domain/explorer_query.py`), and the same rows as CSV."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from terrace.domain.change_requests import subject_and_message
from terrace.domain.errors import Invalid
from terrace.domain.explorer import DOCUMENT_TYPES
from terrace.domain.explorer_query import Query, pairs_of, parse
from terrace.domain.ids import new_id
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.explorer_csv import to_csv
from terrace.web.jsonapi import JSONAPIResponse, JSONBody, read_document, respond, respond_page
from terrace.web.routers.change_requests import change_request

router = APIRouter(prefix="/api/v2")


def _rows(org: str, request: Request, container: Any, principal: Any) -> tuple[Query, list[dict[str, Any]]]:
    query = parse(list(request.query_params.multi_items()))
    return query, container.explorer.query(principal, org, query)


@router.get("/organizations/{org}/explorer")
def explorer(org: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    """Rows as JSON:API resources with dasherized attributes (`workspace-name`), as HCP Terraform answers; the
    query names fields in snake case (`filter[0][workspace_name]...`, `sort`, `fields`) and so does the CSV."""
    query, rows = _rows(org, request, container, principal)
    kind = DOCUMENT_TYPES[query.type]
    return respond_page(request, rows, lambda row: {"id": row["id"], "type": kind, "attributes": {
        name.replace("_", "-"): value for name, value in query.attributes(row).items()}})  # fmt: skip


@router.get("/organizations/{org}/explorer/export/csv")
def explorer_csv(org: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> Response:
    query, rows = _rows(org, request, container, principal)
    return Response(
        to_csv(query, rows),
        media_type="text/csv; charset=utf-8",
        headers={
            "Content-Disposition": f'attachment; filename="{org}-explorer-{query.type}.csv"',
            "X-Content-Type-Options": "nosniff",
        },
    )


BULK_TYPES = ("bulk-actions", "bulk_actions", "explorer-bulk-actions", "explorer_bulk_actions")


@router.post("/organizations/{org}/explorer/bulk-actions")
def bulk_action(org: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    """`action_type: change_request` (or HCP's `change_requests`): a change request (`action_inputs`: subject,
    message) on every workspace of the `query` (the explorer's, of type workspaces, as an object or a query
    string), or on each workspace of `target_ids`."""
    attrs = read_document(body, BULK_TYPES, required=True).get("attributes") or {}
    if attrs.get("action_type") not in ("change_request", "change_requests"):
        raise Invalid("action_type: change_request is the one bulk action", pointer="/data/attributes/action_type")
    subject, message = subject_and_message(attrs.get("action_inputs"))
    target_ids = attrs.get("target_ids")
    if target_ids is not None and (
        not isinstance(target_ids, list) or not target_ids or not all(isinstance(t, str) for t in target_ids)
    ):
        raise Invalid("target_ids: a list of workspace ids", pointer="/data/attributes/target_ids")
    query = None if target_ids is not None else parse(pairs_of(attrs.get("query") or {"type": "workspaces"}))
    made = container.explorer.change_requests(principal, org, query, target_ids, subject, message)
    document = {
        "id": new_id("eba"),
        "type": "explorer-bulk-actions",
        "attributes": {
            "action_type": attrs["action_type"],
            "action_inputs": {"subject": subject, "message": message},
            "created_by": {"id": principal.subject_id, "type": f"{principal.kind.value}s"},
            "workspace_count": len(made),
        },  # fmt: skip
    }
    return respond(document, 201, included=[change_request(cr) for cr in made])
