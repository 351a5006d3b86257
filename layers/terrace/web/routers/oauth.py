"""The token endpoint of `terraform login` (`login.v1`): OAuth 2 errors, not JSON:API, as the CLI expects."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from terrace.services.access.terraform_login import OAuthError
from terrace.web.deps import ContainerDep, FormDep

router = APIRouter()
NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


@router.post("/oauth/token")
def token(container: ContainerDep, form: FormDep) -> JSONResponse:
    try:
        issued = container.terraform_login.exchange(form)
    except OAuthError as exc:
        status = 401 if exc.code == "invalid_client" else 400
        return JSONResponse({"error": exc.code, "error_description": exc.detail}, status_code=status, headers=NO_STORE)
    return JSONResponse({"access_token": issued.secret, "token_type": "bearer"}, headers=NO_STORE)
