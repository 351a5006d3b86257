"""Service discovery and ping: the first two calls every terraform/tofu client makes."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from terrace.services.access.terraform_login import LOGIN_SERVICE
from terrace.web.api_headers import api_headers
from terrace.web.deps import ContainerDep
from terrace.web.routers.module_registry import MODULES_V1
from terrace.web.routers.provider_registry import PROVIDERS_V1

router = APIRouter()
AUDIT_FAILURES_HEADER = "X-Terrace-Audit-Write-Failures"

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


@router.get("/api/v2/ping")
def ping(container: ContainerDep) -> Response:
    """The health endpoint: 204, with the audit events this process failed to write since it started (embedded:
    the one server process; on AWS the `AuditWriteFailures` metric and its alarm say it for every function)."""
    failures = container.audit_trail.write_failures()
    return Response(status_code=204, headers={**api_headers(), AUDIT_FAILURES_HEADER: str(failures)})


@router.get("/api/meta/ip-ranges")
def ip_ranges(request: Request, container: ContainerDep) -> Response:
    """The deployment's own addresses (`domain/ip_ranges.py`), in HCP's shape; public, as HCP's. 304 to a client
    whose `If-Modified-Since` is not older than them."""
    ranges = container.ip_ranges
    headers = {**api_headers(), "Last-Modified": ranges.last_modified(), "Cache-Control": "max-age=3600"}
    if not ranges.modified_since(request.headers.get("if-modified-since")):
        return Response(status_code=304, headers=headers)
    return JSONResponse(ranges.document(), headers=headers)
