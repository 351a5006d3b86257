"""Sign in with an API token, and sign out (the UI's error pages: `web/ui/error_pages.py`)."""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlencode, urlsplit

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from terrace.domain import errors
from terrace.web.audit_trail import note_actor
from terrace.web.deps import ContainerDep, FormDep
from terrace.web.ui import sign_in_guard
from terrace.web.ui.session import COOKIE, CheckedFormDep, SessionDep, render

router = APIRouter(prefix="/app", include_in_schema=False)
log = logging.getLogger("terrace.web")


def local_next(target: str | None) -> str:
    """Where to go after signing in: a page of this UI, never another site (no open redirect). Only a path under
    `/app/` of this origin passes: no scheme or scheme-relative URL (`//host`), no backslash (browsers read `/\\`
    as `//`), no control character or space (stripped by browsers, or splitting a header); anything else is `/app`."""
    target = target or ""
    if target.startswith("/app/") and "\\" not in target and not any(c <= " " or c == "\x7f" for c in target):
        return target
    return "/app"


def sign_in_url(request: Request) -> str:
    """The sign-in page, carrying the page a signed-out GET asked for (a deep link: the run URL terraform prints)
    as its `next`; a POST cannot be replayed, and `/app` is where signing in goes anyway. An htmx poll's page is
    the one the browser shows (`HX-Current-URL`), not the fragment it polls."""
    if request.method != "GET":
        return "/app/sign-in"
    url = urlsplit(request.headers["hx-current-url"]) if "hx-current-url" in request.headers else request.url
    target = local_next(url.path + (f"?{url.query}" if url.query else ""))
    return "/app/sign-in" if target == "/app" else f"/app/sign-in?{urlencode({'next': target})}"


def session_cookie(response: Response, cookie: str) -> Response:
    response.set_cookie(COOKIE, cookie, httponly=True, secure=True, samesite="lax", path="/app")
    return response


def sign_in_form(request: Request, container: Any, *, next: str = "/app", status: int = 200, error: str = "") -> Any:
    """The sign-in page, with the form's login-CSRF token in it and in its pre-session cookie."""
    token = sign_in_guard.form_token(request)
    sso = container.oidc is not None
    page = render(request, "sign_in.html", None, status=status, error=error, next=next, sso=sso, sign_in_token=token)
    return sign_in_guard.set_cookie(page, token)


@router.get("/sign-in")
def sign_in_page(request: Request, container: ContainerDep, next: str = "") -> Any:
    return sign_in_form(request, container, next=local_next(next))


@router.post("/sign-in")
def sign_in(request: Request, container: ContainerDep, form: FormDep) -> Any:
    target = local_next(form.get("next"))
    refusal = sign_in_guard.refusal(request, form, container.settings.public_url)
    if refusal:
        return sign_in_form(request, container, next=target, status=403, error=refusal)
    try:
        cookie, session = container.web_sessions.sign_in(form.get("token", ""))
        note_actor(request, session.principal)  # the sign-in's audit event names who signed in
    except errors.Unauthenticated as exc:
        return sign_in_form(request, container, next=target, status=401, error=exc.detail)
    response = session_cookie(RedirectResponse(target, status_code=303), cookie)
    return sign_in_guard.drop_cookie(response)


@router.post("/sign-out")
def sign_out(container: ContainerDep, session: SessionDep, _form: CheckedFormDep) -> Any:
    container.web_sessions.sign_out(session)
    response = RedirectResponse("/app/sign-in", status_code=303)
    response.delete_cookie(COOKIE, path="/app", httponly=True, secure=True, samesite="lax")
    return response
