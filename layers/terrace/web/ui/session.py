"""Web UI plumbing: templates, the session cookie, CSRF-checked form bodies and the signed-in principal."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.templating import Jinja2Templates

from terrace.domain.web_sessions import WebSession
from terrace.web.audit_trail import note_actor
from terrace.web.deps import ContainerDep, FormDep
from terrace.web.ui import run_labels
from terrace.web.ui.curl import curl_command
from terrace.web.ui.error_pages import CsrfRejected, SignInRequired

COOKIE = "terrace_session"
templates = Jinja2Templates(directory=str(Path(__file__).parent.parent / "templates"))


def when(iso: str | None) -> str:
    """An API timestamp (2026-01-02T03:04:05.678Z) as people read it: 2026-01-02 03:04:05 UTC."""
    if not iso:
        return ""
    return iso.replace("T", " ").split(".")[0].removesuffix("Z") + " UTC"


templates.env.filters["when"] = when


def counted(number: int, noun: str) -> str:
    """A count with its noun in the right number: "1 project", "2 projects", "0 workspaces"."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


templates.env.filters["counted"] = counted
templates.env.filters.update(run_status=run_labels.describe, ago=run_labels.ago, result_tone=run_labels.result_tone)
templates.env.globals["curl_command"] = curl_command  # `_curl.html`


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def same_token(given: str, expected: str) -> bool:
    """A constant-time comparison of a token a client sent (any text, non-ASCII too) with the expected one."""
    return bool(expected) and secrets.compare_digest(_utf8(given), _utf8(expected))


def optional_session(request: Request, container: ContainerDep) -> WebSession | None:
    session = container.web_sessions.resolve(request.cookies.get(COOKIE))
    note_actor(request, session.principal if session else None)  # the request's audit event names its caller
    return session


def require_session(session: Annotated[WebSession | None, Depends(optional_session)]) -> WebSession:
    if session is None:
        raise SignInRequired()
    return session


SessionDep = Annotated[WebSession, Depends(require_session)]


def checked_form(session: SessionDep, form: FormDep) -> dict[str, str]:
    """A form from a signed-in session whose CSRF token matches; every UI POST depends on this."""
    if not same_token(form.get("csrf_token", ""), session.csrf_token):
        raise CsrfRejected()
    return form


CheckedFormDep = Annotated[dict[str, str], Depends(checked_form)]


def field_of(exc: Exception) -> str:
    """The form field an error points at (/data/attributes/key -> key), to show the message beside it."""
    pointer = getattr(exc, "pointer", None) or getattr(exc, "meta", {}).get("pointer") or ""
    return str(pointer).rsplit("/", 1)[-1]


def render(request: Request, name: str, session: WebSession | None, status: int = 200, **context: Any) -> Any:
    context.update(session=session, csrf_token=session.csrf_token if session else "")
    # the site admin's customization (admin/customization-settings): support address, login help, footer
    context.setdefault("customization", request.app.state.container.admin_settings.customization())
    return templates.TemplateResponse(request, name, context, status_code=status)
