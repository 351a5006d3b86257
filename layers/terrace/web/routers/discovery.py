"""Service discovery and ping: the first two calls every terraform/tofu client makes."""

from __future__ import annotations

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse

from terrace.services.access.terraform_login import LOGIN_SERVICE

router = APIRouter()

API_VERSION = "2.6"
TFE_VERSION = "v202410-1"

DISCOVERY = {
    "tfe.v2": "/api/v2/",
    "tfe.v2.1": "/api/v2/",
    "tfe.v2.2": "/api/v2/",
    "state.v2": "/api/v2/",
    "modules.v1": "/api/registry/v1/modules/",
    "login.v1": LOGIN_SERVICE,
}


@router.get("/.well-known/terraform.json")
def discovery() -> JSONResponse:
    # terraform's service discovery requires exactly `application/json`.
    return JSONResponse(DISCOVERY, media_type="application/json")


def api_headers() -> dict[str, str]:
    return {
        "TFP-API-Version": API_VERSION,
        "TFP-AppName": "Terrace",
        "X-TFE-Version": TFE_VERSION,
        "X-TFE-Current-Version": TFE_VERSION,
    }


@router.get("/api/v2/ping")
def ping() -> Response:
    return Response(status_code=204, headers=api_headers())
