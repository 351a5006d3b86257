"""The approval page of `terraform login`: a signed-in user sees which CLI asks for a token and approves or declines."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from terrace.domain.errors import Invalid
from terrace.web.deps import ContainerDep
from terrace.web.ui.session import CheckedFormDep, SessionDep, optional_session, render

router = APIRouter(prefix="/app", include_in_schema=False)

REQUEST_FIELDS = ("client_id", "response_type", "redirect_uri", "code_challenge", "code_challenge_method", "state")


@router.get("/oauth/authorize")
def authorize_page(request: Request, container: ContainerDep) -> Any:
    session = optional_session(request, container)
    params = {key: request.query_params.get(key, "") for key in REQUEST_FIELDS}
    try:  # a request that fails its checks never redirects anywhere: its redirect_uri is not trusted
        login = container.terraform_login.check_request(params)
    except Invalid as exc:
        return render(request, "error.html", session, status=400, title="Invalid login request", detail=exc.detail)
    if session is None:
        here = f"{request.url.path}?{request.url.query}"
        return RedirectResponse(f"/app/sign-in?next={quote(here, safe='')}", status_code=303)
    return render(request, "terraform_login.html", session, login=login, params=params)


@router.post("/oauth/authorize")
def authorize(request: Request, container: ContainerDep, session: SessionDep, form: CheckedFormDep) -> Any:
    login = container.terraform_login.check_request({key: form.get(key, "") for key in REQUEST_FIELDS})
    if form.get("decision") == "approve":
        target = container.terraform_login.approve(session.principal, login)
    else:
        target = container.terraform_login.deny(login)
    return RedirectResponse(target, status_code=303)
