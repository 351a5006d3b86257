"""The UI's error pages, installed on every app as exception handlers: under /app an error is an HTML page in the
app's layout (a missing session a redirect to the sign-in page), elsewhere the API's JSON:API error. Light to
import: the templates and the sign-in page load with the first page they render (the API Lambda's cold start
does without them)."""

from __future__ import annotations

import inspect
import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from terrace.domain import errors
from terrace.web.errors import status_of

log = logging.getLogger("terrace.web")


class SignInRequired(Exception):
    """No live session: the UI redirects to the sign-in page."""


class CsrfRejected(Exception):
    """A form POST without the session's CSRF token."""


PAGE_ERRORS = {
    404: ("not found", "There is no such page. Check the address, or find it from your organizations."),
    405: ("method not allowed", "This address answers a form's button, not a visit: go back to the page with it."),
    422: ("invalid request", "The address has a malformed parameter. Check the link you followed."),
    500: ("internal error", "Something went wrong on the server (it is logged). Try again, or tell your operator."),
}


def install(app: FastAPI) -> None:
    """UI errors render as HTML pages under /app; everything else keeps the API's JSON:API errors."""
    api_handler = app.exception_handlers[errors.TerraceError]

    async def _sign_in(request: Request, exc: Exception) -> Response:
        from terrace.web.ui.auth import sign_in_url  # raised by the UI's pages only: they are built

        if request.headers.get("hx-request"):  # a poll of a page whose session ended: the whole page goes there
            return Response(status_code=204, headers={"HX-Redirect": sign_in_url(request)})
        return RedirectResponse(sign_in_url(request), status_code=303)

    async def _csrf(request: Request, exc: Exception) -> Response:
        from terrace.web.ui.session import render

        detail = "The form was missing its security token. Reload the page and try again."
        return render(request, "error.html", None, status=403, title="Forbidden", detail=detail)

    async def _page(request: Request, status: int, title: str, detail: str) -> Response:
        from terrace.web.ui.session import COOKIE, render

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
