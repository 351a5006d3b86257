"""Your API tokens: list, create (the secret is shown once), revoke, and the CLI configuration snippet.

Creating a token is post/redirect/get: the POST answers a redirect to the tokens page, so a reload never creates
another. The new secret crosses the redirect in a flash cookie, never in the URL (a URL lands in the history, logs
and the Referer): signed and dated (itsdangerous, under the URL-signing secret with a purpose of its own), bound to
the signed-in user, for this page's path only, dropped by the page that shows it and refused after FLASH_TTL_S.
The page showing it is `Cache-Control: no-store`. The secret is never stored server-side.
"""

from __future__ import annotations

import hashlib
from typing import Any
from urllib.parse import urlparse

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from itsdangerous import BadSignature, URLSafeTimedSerializer

from terrace.domain.principal import PrincipalKind
from terrace.web.deps import ContainerDep
from terrace.web.routers.accounts import _own_user  # the API's ownership rule, not a second one
from terrace.web.ui.session import CheckedFormDep, SessionDep, render

router = APIRouter(prefix="/app", include_in_schema=False)
PAGE = "/app/account/tokens"
FLASH_COOKIE = "terrace_new_token"
FLASH_SALT = "terrace.new-token-flash"
FLASH_TTL_S = 120


def cli_host(public_url: str) -> str:
    """The host terraform names this server by (`terraform login`, `credentials`, the `cloud` block's hostname):
    host and port, the port left out only when it is the scheme's default."""
    parts = urlparse(public_url)
    host = parts.hostname or "localhost"
    default = {"https": 443, "http": 80}.get(parts.scheme)
    return f"{host}:{parts.port}" if parts.port and parts.port != default else host


def _flash(container: Any) -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(
        container.settings.url_signing_secret, salt=FLASH_SALT, signer_kwargs={"digest_method": hashlib.sha256}
    )


def _new_secret(request: Request, container: Any, session: Any, page: str = PAGE) -> str | None:
    """The secret the flash cookie carries for this user and page, while it is fresh; None otherwise."""
    try:
        data = _flash(container).loads(request.cookies.get(FLASH_COOKIE, ""), max_age=FLASH_TTL_S)
    except BadSignature:  # also expired (SignatureExpired is one)
        return None
    if not isinstance(data, dict) or data.get("user") != session.principal.subject_id:
        return None
    if data.get("page", PAGE) != page:
        return None
    secret = data.get("secret")
    return secret if isinstance(secret, str) else None


def redirect_with_secret(container: Any, session: Any, secret: str, page: str, anchor: str = "") -> Response:
    """The POST's answer that hands a new secret to `page` (its path) once: a redirect and the flash cookie."""
    flash = _flash(container).dumps({"user": session.principal.subject_id, "secret": secret, "page": page})
    response = RedirectResponse(page + anchor, status_code=303)
    response.headers["Cache-Control"] = "no-store"
    response.set_cookie(FLASH_COOKIE, flash, max_age=FLASH_TTL_S, path=page, secure=True, httponly=True,
                        samesite="strict")  # fmt: skip
    return response


def shown_once(request: Request, container: Any, session: Any, page: str, render_page: Any) -> Any:
    """`render_page(secret)` (the secret a redirect handed over, or None), dropping the flash cookie; a page that
    shows a secret is kept by no cache."""
    secret = _new_secret(request, container, session, page)
    response = render_page(secret)
    if request.cookies.get(FLASH_COOKIE) is not None:
        response.delete_cookie(FLASH_COOKIE, path=page, secure=True, httponly=True, samesite="strict")
    if secret:
        response.headers["Cache-Control"] = "no-store"
    return response


def _page(request: Request, container: Any, session: Any, **extra: Any) -> Any:
    host = cli_host(container.settings.public_url)
    tokens = container.accounts.list_tokens(session.principal.subject_id)
    # terraform reads TF_TOKEN_<host> for a host name alone: a host with a port has no such variable
    env_name = None if ":" in host else "TF_TOKEN_" + host.replace(".", "_").replace("-", "__")
    return render(request, "tokens.html", session, tokens=tokens, host=host, env_name=env_name, **extra)


@router.get("/account/tokens")
def tokens(request: Request, container: ContainerDep, session: SessionDep) -> Any:
    return shown_once(request, container, session, PAGE,
                      lambda secret: _page(request, container, session, new_secret=secret))  # fmt: skip


@router.post("/account/tokens")
def create_token(container: ContainerDep, session: SessionDep, form: CheckedFormDep) -> Response:
    description = form.get("description", "").strip()[:200]
    issued = container.accounts.issue_token(PrincipalKind.USER, session.principal.subject_id, description=description)
    return redirect_with_secret(container, session, issued.secret, PAGE)


@router.post("/account/tokens/{token_id}/revoke")
def revoke_token(container: ContainerDep, session: SessionDep, token_id: str, form: CheckedFormDep) -> Any:
    token = container.accounts.get_token(token_id)
    _own_user(session.principal, token.subject_id)
    container.accounts.revoke_token(token_id)
    return RedirectResponse(PAGE, status_code=303)
