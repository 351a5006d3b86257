"""An organization's agent pools: their agents (status, last ping), creating a pool, issuing a token (its secret shown
once, crossing the post/redirect/get in the same signed, user-bound flash cookie as API tokens: `tokens.py`) and
revoking one. Same service calls as the API (`services/workspaces/agent_pools.py`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from terrace.domain import errors
from terrace.domain.clock import epoch
from terrace.web.deps import ContainerDep
from terrace.web.ui.session import CheckedFormDep, SessionDep, render
from terrace.web.ui.tokens import FLASH_COOKIE, FLASH_TTL_S, _flash, _new_secret

router = APIRouter(prefix="/app", include_in_schema=False)
ROUTE = "/{organization}/agent-pools"
PAGE = "/app" + ROUTE


def _page(request: Request, container: Any, session: Any, organization: str, status: int = 200, **extra: Any) -> Any:
    pools = container.agent_pools.list(session.principal, organization)
    service = container.agent_pools
    rows = []
    for pool in pools:
        tokens = service.tokens(session.principal, pool.id) if extra.get("may_manage") else []
        rows.append({"pool": pool, "agents": service.agents_of(pool), "tokens": tokens})
    return render(request, "agent_pools.html", session, status=status, organization=organization, rows=rows,
                  now=epoch(), **extra)  # fmt: skip


@router.get(ROUTE)
def agent_pools(request: Request, container: ContainerDep, session: SessionDep, organization: str) -> Any:
    may_manage = container.agent_pools.may_manage(session.principal, organization)
    secret = _new_secret(request, container, session)
    page = _page(request, container, session, organization, may_manage=may_manage, new_secret=secret)
    path = PAGE.format(organization=organization)
    if request.cookies.get(FLASH_COOKIE) is not None:
        page.delete_cookie(FLASH_COOKIE, path=path, secure=True, httponly=True, samesite="strict")
    if secret:
        page.headers["Cache-Control"] = "no-store"
    return page


@router.post(ROUTE)
def create_pool(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, form: CheckedFormDep
) -> Any:
    attrs = {"name": form.get("name", "").strip(), "organization-scoped": form.get("scope") != "allowed"}
    try:
        container.agent_pools.create(session.principal, organization, attrs, {})
    except (errors.Invalid, errors.Conflict) as exc:
        return _page(request, container, session, organization, status=422, may_manage=True, error=exc.detail)
    return RedirectResponse(PAGE.format(organization=organization), status_code=303)


@router.post(ROUTE + "/{pool_id}/tokens")
def create_token(container: ContainerDep, session: SessionDep, organization: str, pool_id: str,
                 form: CheckedFormDep) -> Response:  # fmt: skip
    description = form.get("description", "").strip()[:200] or "agent token"
    issued = container.agent_pools.issue_token(session.principal, pool_id, description)
    path = PAGE.format(organization=organization)
    response = RedirectResponse(path, status_code=303)
    response.headers["Cache-Control"] = "no-store"
    flash = _flash(container).dumps({"user": session.principal.subject_id, "secret": issued.secret})
    response.set_cookie(FLASH_COOKIE, flash, max_age=FLASH_TTL_S, path=path, secure=True, httponly=True,
                        samesite="strict")  # fmt: skip
    return response


@router.post(ROUTE + "/tokens/{token_id}/revoke")
def revoke_token(container: ContainerDep, session: SessionDep, organization: str, token_id: str,
                 form: CheckedFormDep) -> Response:  # fmt: skip
    container.agent_pools.revoke_token_by_id(session.principal, token_id)
    return RedirectResponse(PAGE.format(organization=organization), status_code=303)
