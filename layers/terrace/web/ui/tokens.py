"""Your API tokens: list, create (the secret is shown once), revoke, and the CLI configuration snippet."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from terrace.domain.principal import PrincipalKind
from terrace.web.deps import ContainerDep
from terrace.web.routers.accounts import _own_user  # the API's ownership rule, not a second one
from terrace.web.ui.session import CheckedFormDep, SessionDep, render

router = APIRouter(prefix="/app", include_in_schema=False)


def _page(request: Request, container: Any, session: Any, **extra: Any) -> Any:
    host = urlparse(container.settings.public_url).hostname or "localhost"
    tokens = container.accounts.list_tokens(session.principal.subject_id)
    env_name = "TF_TOKEN_" + host.replace(".", "_").replace("-", "__")
    return render(request, "tokens.html", session, tokens=tokens, host=host, env_name=env_name, **extra)


@router.get("/account/tokens")
def tokens(request: Request, container: ContainerDep, session: SessionDep) -> Any:
    return _page(request, container, session)


@router.post("/account/tokens")
def create_token(request: Request, container: ContainerDep, session: SessionDep, form: CheckedFormDep) -> Any:
    description = form.get("description", "").strip()[:200]
    issued = container.accounts.issue_token(PrincipalKind.USER, session.principal.subject_id, description=description)
    page = _page(request, container, session, new_secret=issued.secret)
    page.headers["Cache-Control"] = "no-store"  # the secret is shown once: no cache keeps a copy
    return page


@router.post("/account/tokens/{token_id}/revoke")
def revoke_token(container: ContainerDep, session: SessionDep, token_id: str, form: CheckedFormDep) -> Any:
    token = container.accounts.get_token(token_id)
    _own_user(session.principal, token.subject_id)
    container.accounts.revoke_token(token_id)
    return RedirectResponse("/app/account/tokens", status_code=303)
