"""Single sign-on for the web UI through the operator's OpenID Connect issuer (`services/access/oidc.py`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from terrace.domain.errors import NotFound, Unauthenticated
from terrace.web.deps import ContainerDep
from terrace.web.ui.auth import local_next, session_cookie, sign_in_form

router = APIRouter(prefix="/app", include_in_schema=False)


@router.get("/sign-in/oidc")
def start(container: ContainerDep, next: str = "") -> Any:
    if container.oidc is None:
        raise NotFound("single sign-on is not configured")
    return RedirectResponse(container.oidc.start(local_next(next)), status_code=303)


@router.get("/sign-in/oidc/callback")
def callback(request: Request, container: ContainerDep) -> Any:
    if container.oidc is None:
        raise NotFound("single sign-on is not configured")
    try:
        cookie, _, target = container.oidc.finish(dict(request.query_params))
    except Unauthenticated as exc:
        return sign_in_form(request, container, status=401, error=exc.detail)
    return session_cookie(RedirectResponse(local_next(target), status_code=303), cookie)
