"""The provider registry protocol (`providers.v1` in service discovery): what `terraform init` and `tofu init`
call for a provider `<host>/<organization>/<name>` (`services/registry/provider_downloads.py`). The caller's
token is the CLI's credentials for the host; members of the organization read, others 404."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from terrace.web.deps import ContainerDep, PrincipalDep

PROVIDERS_V1 = "/api/registry/v1/providers/"
router = APIRouter(prefix=PROVIDERS_V1.rstrip("/"))


@router.get("/{namespace}/{name}/versions")
def provider_versions(namespace: str, name: str, container: ContainerDep, principal: PrincipalDep) -> JSONResponse:
    versions = container.provider_downloads.available(principal, namespace, name)
    return JSONResponse({"id": f"{namespace}/{name}", "versions": versions, "warnings": None})


@router.get("/{namespace}/{name}/{version}/download/{os}/{arch}")
def provider_download(
    namespace: str, name: str, version: str, os: str, arch: str, container: ContainerDep, principal: PrincipalDep
) -> JSONResponse:
    return JSONResponse(container.provider_downloads.download(principal, namespace, name, version, (os, arch)))
