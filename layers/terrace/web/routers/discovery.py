"""Service discovery and ping: the first two calls every terraform/tofu client makes."""

from __future__ import annotations

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse

from terrace import __version__ as TERRACE_VERSION
from terrace.services.access.terraform_login import LOGIN_SERVICE
from terrace.web.routers.module_registry import MODULES_V1
from terrace.web.routers.provider_registry import PROVIDERS_V1

router = APIRouter()

API_VERSION = "2.6"
# X-TFE-Version keeps TFE's `vYYYYMM-N` form: terraform's `cloud` backend parses it (`strconv.Atoi` of YYYYMM) to
# decide features; Terrace's own version goes in X-Terrace-Version.
TFE_VERSION = "v202410-1"

DISCOVERY = {
    "tfe.v2": "/api/v2/",
    "tfe.v2.1": "/api/v2/",
    "tfe.v2.2": "/api/v2/",
    "state.v2": "/api/v2/",
    "login.v1": LOGIN_SERVICE,
    "modules.v1": MODULES_V1,
    "providers.v1": PROVIDERS_V1,
}


@router.get("/.well-known/terraform.json")
def discovery() -> JSONResponse:
    # terraform's service discovery requires exactly `application/json`.
    return JSONResponse(DISCOVERY, media_type="application/json")


def api_headers(rate_limit_per_s: int = 0) -> dict[str, str]:
    headers = {
        "TFP-API-Version": API_VERSION,
        "TFP-AppName": "Terrace",
        "X-TFE-Version": TFE_VERSION,
        "X-TFE-Current-Version": TFE_VERSION,
        "X-Terrace-Version": TERRACE_VERSION,
    }
    if rate_limit_per_s > 0:
        headers["X-RateLimit-Limit"] = str(rate_limit_per_s)  # go-tfe paces itself at 2/3 of it
    return headers


@router.get("/api/v2/ping")
def ping() -> Response:
    return Response(status_code=204, headers=api_headers())
