"""Search the organization's resources by address, type, provider, id or ARN (the state index's search)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from terrace.web.deps import ContainerDep
from terrace.web.ui import resource_history
from terrace.web.ui.session import SessionDep, render

router = APIRouter(prefix="/app", include_in_schema=False)
router.include_router(resource_history.router)  # a hit's history
MAX_SHOWN = 500


@router.get("/{organization}/search")
def search(
    request: Request,
    container: ContainerDep,
    session: SessionDep,
    organization: str,
    q: str = "",
    type: str = "",  # noqa: A002 - the query parameter's name
    provider: str = "",
) -> Any:
    q, type_, provider = q.strip()[:200], type.strip()[:200], provider.strip()[:200]
    asked = bool(q or type_ or provider)
    container.organizations.get(session.principal, organization)
    hits = (
        container.state_versions.search_resources(session.principal, organization, q, type_, provider) if asked else []
    )
    return render(
        request,
        "search.html",
        session,
        organization=organization,
        q=q,
        type=type_,
        provider=provider,
        asked=asked,
        hits=hits[:MAX_SHOWN],
        total=len(hits),
    )
