"""The module registry protocol (`modules.v1` in service discovery): what `terraform init` and `tofu init` call
for a module source `<host>/<organization>/<name>/<provider>`. Versions of the organization's private modules
that were read as modules (`ok`); a download answers 204 with `X-Terraform-Get`, a short-lived signed URL of the
tarball. A deprecated version is listed with its `deprecation` (`reason`, `link`), as HCP Terraform lists it. The
caller's token is the CLI's credentials for the host; members of the organization read, others 404.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse

from terrace.domain.registry_modules import ModuleVersion
from terrace.web.deps import ContainerDep, PrincipalDep

MODULES_V1 = "/api/registry/v1/modules/"
router = APIRouter(prefix=MODULES_V1.rstrip("/"))


@router.get("/{namespace}/{name}/{provider}/versions")
def module_versions(
    namespace: str, name: str, provider: str, container: ContainerDep, principal: PrincipalDep
) -> JSONResponse:
    versions = container.module_versions.available(principal, namespace, name, provider)
    source = f"{namespace}/{name}/{provider}"
    return JSONResponse({"modules": [{"source": source, "versions": [_listed(v) for v in versions]}]})


@router.get("/{namespace}/{name}/{provider}/{version}/download")
def module_download(
    namespace: str, name: str, provider: str, version: str, container: ContainerDep, principal: PrincipalDep
) -> Response:
    url = container.module_versions.download_url(principal, namespace, name, provider, version)
    return Response(status_code=204, headers={"X-Terraform-Get": url})


def _listed(version: ModuleVersion) -> dict[str, Any]:
    """A version as the protocol lists it; a deprecated one with its `deprecation` (`reason`, `link`), a revoked one
    (listed to a configuration from before its revocation only) also with its `revocation` (`message`, `link`:
    the runner's warning reads it; clients ignore it)."""
    listed: dict[str, Any] = {"version": version.version}
    if version.deprecation:
        listed["deprecation"] = version.deprecation
    if version.revocation:
        listed["revocation"] = {"message": version.revocation["message"], "link": version.revocation["link"]}
    return listed
