"""Sign in with an API token, sign out, and the UI's error pages."""

from __future__ import annotations

import inspect
import logging
from typing import Any
from urllib.parse import urlencode, urlsplit

from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from terrace.domain import errors
from terrace.web.deps import ContainerDep, FormDep
from terrace.web.errors import status_of
from terrace.web.ui import sign_in_guard
from terrace.web.ui.session import COOKIE, CheckedFormDep, CsrfRejected, SessionDep, SignInRequired, render

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
        cookie, _ = container.web_sessions.sign_in(form.get("token", ""))
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


def install(app: FastAPI) -> None:
    """UI errors render as HTML pages under /app; everything else keeps the API's JSON:API errors."""
    api_handler = app.exception_handlers[errors.TerraceError]

    async def _sign_in(request: Request, exc: Exception) -> Response:
        if request.headers.get("hx-request"):  # a poll of a page whose session ended: the whole page goes there
            return Response(status_code=204, headers={"HX-Redirect": sign_in_url(request)})
        return RedirectResponse(sign_in_url(request), status_code=303)

    async def _csrf(request: Request, exc: Exception) -> Response:
        detail = "The form was missing its security token. Reload the page and try again."
        return render(request, "error.html", None, status=403, title="Forbidden", detail=detail)

    async def _page(request: Request, status: int, title: str, detail: str) -> Response:
        session = await run_in_threadpool(request.app.state.container.web_sessions.resolve, request.cookies.get(COOKIE))
        return render(request, "error.html", session, status=status, title=title, detail=detail)

    async def _domain(request: Request, exc: Exception) -> Response:
        if not request.url.path.startswith("/app") or not isinstance(exc, errors.TerraceError):
            answer = api_handler(request, exc)
            return await answer if inspect.isawaitable(answer) else answer
        status = status_of(exc)
        if status == 403:  # pages never reveal that something exists to someone who may not read it
            status, exc = 404, errors.NotFound("not found")
        return await _page(request, status, exc.title, exc.detail)

    def _html_under_app(exc_type: type[Exception]) -> None:
        """No page under /app answers JSON: an unknown page (404), a GET of a form's POST (405) or a malformed query
        (422) is an HTML page in the app's layout; the API keeps its JSON:API errors."""
        api = app.exception_handlers[exc_type]

        async def handler(request: Request, exc: Exception) -> Response:
            if request.url.path != "/app" and not request.url.path.startswith("/app/"):
                answer = api(request, exc)
                return await answer if inspect.isawaitable(answer) else answer
            if isinstance(exc, StarletteHTTPException):
                status = exc.status_code
            elif isinstance(exc, RequestValidationError):
                status = 422
            else:
                log.exception("unhandled error on %s %s", request.method, request.url.path)
                status = 500
            title, detail = PAGE_ERRORS.get(status, ("error", "This request could not be handled."))
            return await _page(request, status, title, detail)

        app.add_exception_handler(exc_type, handler)

    app.add_exception_handler(SignInRequired, _sign_in)
    app.add_exception_handler(CsrfRejected, _csrf)
    app.add_exception_handler(errors.TerraceError, _domain)
    _html_under_app(StarletteHTTPException)
    _html_under_app(RequestValidationError)
    _html_under_app(Exception)


PAGE_ERRORS = {
    404: ("not found", "There is no such page. Check the address, or find it from your organizations."),
    405: ("method not allowed", "This address answers a form's button, not a visit: go back to the page with it."),
    422: ("invalid request", "The address has a malformed parameter. Check the link you followed."),
    500: ("internal error", "Something went wrong on the server (it is logged). Try again, or tell your operator."),
}
