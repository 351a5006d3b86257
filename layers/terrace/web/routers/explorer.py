"""/api/v2 explorer (HCP Terraform's explorer API): a view of the organization's workspaces, terraform versions,
providers or modules, filtered, sorted and paged (`domain/explorer_query.py`), and the same rows as CSV."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from terrace.domain.explorer import DOCUMENT_TYPES
from terrace.domain.explorer_query import Query, parse
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.explorer_csv import to_csv
from terrace.web.jsonapi import JSONAPIResponse, respond_page

router = APIRouter(prefix="/api/v2")


def _rows(org: str, request: Request, container: Any, principal: Any) -> tuple[Query, list[dict[str, Any]]]:
    query = parse(list(request.query_params.multi_items()))
    return query, container.explorer.query(principal, org, query)


@router.get("/organizations/{org}/explorer")
def explorer(org: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    query, rows = _rows(org, request, container, principal)
    kind = DOCUMENT_TYPES[query.type]
    return respond_page(request, rows, lambda row: {"id": row["id"], "type": kind, "attributes": query.attributes(row)})


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
