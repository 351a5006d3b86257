"""Login CSRF: a sign-in form posted from another site must not sign the browser in (as the attacker).

Two checks on `POST /app/sign-in`: the request's `Origin` (or, without one, its `Referer`) is this server (its public
URL, or the host the browser addressed); and the form's `csrf_token` equals the pre-session cookie the sign-in page
set (double submit: a random value in a `SameSite=Strict` cookie that another site can neither read nor send).
"""

from __future__ import annotations

import re
import secrets
from urllib.parse import urlsplit

from fastapi import Request, Response

from terrace.web.ui.session import same_token

COOKIE = "terrace_sign_in_csrf"
PATH = "/app/sign-in"  # the form's page, its POST and the single sign-on callback that may render it again
_WELL_FORMED = re.compile(r"[A-Za-z0-9_-]{43}")  # what secrets.token_urlsafe(32) gives


def form_token(request: Request) -> str:
    """The token of the sign-in form: the browser's pre-session cookie when it has one, else a new one."""
    current = request.cookies.get(COOKIE, "")
    return current if _WELL_FORMED.fullmatch(current) else secrets.token_urlsafe(32)


def set_cookie(response: Response, token: str) -> Response:
    response.set_cookie(COOKIE, token, httponly=True, secure=True, samesite="strict", path=PATH)
    return response


def drop_cookie(response: Response) -> Response:
    response.delete_cookie(COOKIE, path=PATH, httponly=True, secure=True, samesite="strict")
    return response


def _netloc(url: str) -> str:
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return ""
    return f"{parts.hostname}:{port}" if parts.hostname else ""


def same_origin(request: Request, public_url: str) -> bool:
    """The form was posted from a page of this server: by its `Origin`, else its `Referer`; a request with neither
    (an old browser, a script) passes here and rests on the token alone."""
    source = request.headers.get("origin") or request.headers.get("referer")
    if source is None:
        return True
    own = {_netloc(public_url), _netloc(f"{request.url.scheme}://{request.headers.get('host', '')}")}
    return source != "null" and _netloc(source) in own - {""}


def refusal(request: Request, form: dict[str, str], public_url: str) -> str | None:
    """Why this sign-in POST is refused, or None when it comes from this server's own sign-in form."""
    if not same_origin(request, public_url):
        return (
            "This sign-in was sent from another site. Sign in from this server's own page"
            " (behind a proxy, TERRACE_PUBLIC_URL must be the address you use)."
        )
    if not same_token(form.get("csrf_token", ""), request.cookies.get(COOKIE, "")):
        return "The sign-in form expired or came from another page. Try again."
    return None
