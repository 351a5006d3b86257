"""The private registry's pages: an organization's modules and providers, a module's versions with the README,
inputs, outputs and resources of one version and how to use it, and a provider's versions with their platforms.
Same service calls as the API (`services/registry/`); the registry host is the one terraform accepts for this
server (`127.0.0.1:<port>` for a local `localhost:<port>`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request

from terrace.domain.registry_modules import registry_hostname
from terrace.web.deps import ContainerDep
from terrace.web.ui.session import SessionDep, render

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
    address = (organization, name, provider)
    module, shown, docs = container.module_versions.page(session.principal, organization, address, version or None)
    host = registry_hostname(request.url.netloc)
    return render(request, "registry_module.html", session, organization=organization, module=module, shown=shown,
                  docs=docs, source=f"{host}/{module.namespace}/{module.name}/{module.provider}",
                  org_tab="/registry")  # fmt: skip
