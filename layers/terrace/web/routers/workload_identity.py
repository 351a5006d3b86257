"""Terrace as an OpenID Connect issuer of workload identity tokens (dynamic provider credentials): the discovery
document and the public keys that AWS IAM, GCP, Azure and Vault fetch to verify a run's token
(`services/access/workload_issuer.py`). Public, cacheable, never written by a read."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from terrace.web.deps import ContainerDep

router = APIRouter()
CACHE = "public, max-age=60"  # a rotation publishes a new key this long at least before it signs


@router.get("/.well-known/openid-configuration")
def openid_configuration(container: ContainerDep) -> JSONResponse:
    return _json(container.workload_issuer.discovery())


@router.get("/.well-known/jwks")
def jwks(container: ContainerDep) -> JSONResponse:
    keys = container.workload_issuer.jwks()
    return _json(keys, CACHE if keys["keys"] else "no-store")  # the first key signs as soon as it is made


def _json(document: dict[str, Any], cache: str = CACHE) -> JSONResponse:
    return JSONResponse(document, headers={"Cache-Control": cache})
