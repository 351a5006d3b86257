"""The private registry's pages: an organization's modules and providers, a module's versions with the README,
inputs, outputs and resources of one version and how to use it, and a provider's versions with their platforms.
Same service calls as the API (`services/registry/`); the registry host is the one terraform accepts for this
server (`127.0.0.1:<port>` for a local `localhost:<port>`)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import RedirectResponse
from starlette.datastructures import UploadFile

from terrace.domain import errors
from terrace.domain.registry_modules import registry_hostname
from terrace.web.deps import ContainerDep
from terrace.web.ui.session import CsrfRejected, SessionDep, render, same_token

router = APIRouter(prefix="/app", include_in_schema=False)


@router.get("/{organization}/registry")
def modules(request: Request, container: ContainerDep, session: SessionDep, organization: str) -> Any:
    query = {"q": request.query_params.get("q", "")}
    found = container.registry_modules.list(session.principal, organization, query)
    providers = container.registry_providers.list(session.principal, organization, query)
    return render(request, "registry.html", session, organization=organization, modules=found, providers=providers,
                  org_tab="/registry", q=query["q"])  # fmt: skip


@router.get("/{organization}/registry-providers/{name}")
def provider_page(request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str) -> Any:
    provider, versions = container.provider_platforms.page(session.principal, organization, name)
    host = registry_hostname(request.url.netloc)
    return render(request, "registry_provider.html", session, organization=organization, provider=provider,
                  versions=versions, source=f"{host}/{provider.namespace}/{provider.name}",
                  org_tab="/registry")  # fmt: skip


@router.get("/{organization}/registry/{name}/{provider}")
def module_page(
    request: Request,
    container: ContainerDep,
    session: SessionDep,
    organization: str,
    name: str,
    provider: str,
    version: str = Query(""),
) -> Any:
    return _module_page(request, container, session, (organization, name, provider), version)


def _module_page(
    request: Request,
    container: Any,
    session: Any,
    address: tuple[str, str, str],
    version: str,
    status: int = 200,
    error: str = "",
    form: dict[str, str] | None = None,
) -> Any:
    organization = address[0]
    module, shown, docs = container.module_versions.page(session.principal, organization, address, version or None)
    host = registry_hostname(request.url.netloc)
    return render(request, "registry_module.html", session, status, organization=organization, module=module,
                  shown=shown, docs=docs, source=f"{host}/{module.namespace}/{module.name}/{module.provider}",
                  org_tab="/registry", error=error, form=form or {})  # fmt: skip


async def module_upload(request: Request, session: SessionDep) -> dict[str, Any]:
    """The upload form (multipart: a version and its `.tar.gz`, within the request size limit), CSRF checked."""
    async with request.form(max_files=1, max_fields=4) as form:
        if not same_token(str(form.get("csrf_token", "")), session.csrf_token):
            raise CsrfRejected()
        upload = form.get("tarball")
        data = await upload.read() if isinstance(upload, UploadFile) else b""
        return {"version": str(form.get("version", "")).strip(), "tarball": data}


ModuleUploadDep = Annotated[dict[str, Any], Depends(module_upload)]


@router.post("/{organization}/registry/{name}/{provider}/versions")
def upload_module_version(
    request: Request,
    container: ContainerDep,
    session: SessionDep,
    organization: str,
    name: str,
    provider: str,
    upload: ModuleUploadDep,
) -> Any:
    """Publishing a module version from the browser: the same checks and landing as the API's upload."""
    address = (organization, name, provider)
    try:
        published = container.module_versions.publish(
            session.principal, organization, address, upload["version"], upload["tarball"]
        )
    except (errors.Invalid, errors.Conflict) as exc:
        status = 409 if isinstance(exc, errors.Conflict) else 422
        form = {"version": upload["version"]}
        return _module_page(request, container, session, address, "", status, exc.detail, form)
    target = f"/app/{organization}/registry/{name}/{provider}?version={published.version}"
    return RedirectResponse(target, status_code=303)
