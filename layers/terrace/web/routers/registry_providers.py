"""/api/v2 private registry providers (go-tfe's `registry_provider.go`, `registry_provider_version.go`,
`registry_provider_platform.go`): providers (private and public), a private provider's versions (`links`
`shasums-upload` and `shasums-sig-upload` while the file is missing, `shasums-download` and `shasums-sig-download`
once it landed) and their platforms (`links.provider-binary-upload` for the zip)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from terrace.domain.registry_providers import PRIVATE, ProviderPlatform, ProviderVersion, RegistryProvider
from terrace.web import integration_bodies
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import (
    JSONAPIResponse,
    JSONBody,
    attributes,
    includes,
    paginate,
    read_document,
    ref,
    refs,
    resource,
    respond,
)

router = APIRouter(prefix="/api/v2")
PROVIDERS = "/organizations/{org}/registry-providers"
ONE = PROVIDERS + "/{registry}/{namespace}/{name}"
VERSIONS = ONE + "/versions"
PLATFORMS = VERSIONS + "/{version}/platforms"
INCLUDE_VERSIONS = "registry-provider-versions"


def serialize(provider: RegistryProvider) -> dict[str, Any]:
    relationships = {"organization": {"data": {"id": provider.organization_name, "type": "organizations"}}}
    if provider.registry_name == PRIVATE:
        relationships["registry-provider-versions"] = refs(INCLUDE_VERSIONS, [v.id for v in provider.versions])
    path = f"{provider.organization_name}/registry-providers/{provider.registry_name}/{provider.address}"
    return resource(
        "registry-providers",
        provider.id,
        {
            "name": provider.name,
            "namespace": provider.namespace,
            "registry-name": provider.registry_name,
            "permissions": {"can-delete": provider.can_manage},
            "created-at": provider.created_at,
            "updated-at": provider.updated_at,
        },
        relationships=relationships,
        links={"self": f"/api/v2/organizations/{path}"},
    )


def serialize_version(
    provider: RegistryProvider, version: ProviderVersion, links: dict[str, str] | None = None
) -> dict[str, Any]:
    return resource(
        INCLUDE_VERSIONS,
        version.id,
        {
            "version": version.version,
            "key-id": version.key_id,
            "protocols": list(version.protocols),
            "permissions": {"can-delete": provider.can_manage, "can-upload-asset": provider.can_manage},
            "shasums-uploaded": version.shasums_uploaded,
            "shasums-sig-uploaded": version.signature_uploaded,
            "created-at": version.created_at,
            "updated-at": version.updated_at,
        },
        relationships={"registry-provider": ref("registry-providers", provider.id)},
        links=links or {},
    )


def serialize_platform(platform: ProviderPlatform, links: dict[str, str], can_manage: bool) -> dict[str, Any]:
    return resource(
        "registry-provider-platforms",
        platform.id,
        {
            "os": platform.os,
            "arch": platform.arch,
            "filename": platform.filename,
            "shasum": platform.shasum,
            "permissions": {"can-delete": can_manage, "can-upload-asset": can_manage},
            "provider-binary-uploaded": platform.uploaded,
        },
        relationships={"registry-provider-version": ref(INCLUDE_VERSIONS, platform.version_id)},
        links=links,
    )


def _untyped(body: Any, type_: str) -> dict[str, Any]:
    """go-tfe's version and platform create options have no JSON:API type (it sends `"type": ""`)."""
    if isinstance(body, dict) and isinstance(body.get("data"), dict) and not body["data"].get("type"):
        body["data"]["type"] = type_
    return read_document(body, type_)


def respond_page(request: Request, items: list[Any], serialize: Any, **extra: Any) -> JSONAPIResponse:
    """A page; HCP Terraform's registry counts no pages when there is nothing (go-tfe's tests check it)."""
    page, meta, links = paginate(request, items)
    if not items:
        meta["pagination"]["total-pages"] = 0
    return respond([serialize(item) for item in page], meta=meta, links=links, **extra)


def _with_versions(request: Request, container: Any, providers: list[RegistryProvider]) -> list[dict[str, Any]]:
    if INCLUDE_VERSIONS not in includes(request):
        return []
    versions = container.provider_versions
    return [serialize_version(p, v, versions.upload_links(p, v)) for p in providers for v in p.versions]


# providers -----------------------------------------------------------------------------------------
@router.get(PROVIDERS)
def list_registry_providers(
    org: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    params = request.query_params
    filters = {"q": params.get("q", ""), "registry_name": params.get("filter[registry_name]", "")}
    found = container.registry_providers.list(principal, org, filters)
    return respond_page(request, found, serialize, included=_with_versions(request, container, found))


@router.post(PROVIDERS, openapi_extra=integration_bodies.REGISTRY_PROVIDER)
def create_registry_provider(
    org: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    data = read_document(body, "registry-providers")
    return respond(serialize(container.registry_providers.create(principal, org, attributes(data))), 201)


@router.get(ONE)
def read_registry_provider(
    org: str,
    registry: str,
    namespace: str,
    name: str,
    request: Request,
    container: ContainerDep,
    principal: PrincipalDep,
) -> JSONAPIResponse:
    provider = container.registry_providers.get(principal, org, (registry, namespace, name))
    return respond(serialize(provider), included=_with_versions(request, container, [provider]))


@router.delete(ONE)
def delete_registry_provider(
    org: str, registry: str, namespace: str, name: str, container: ContainerDep, principal: PrincipalDep
) -> Response:
    container.registry_providers.delete(principal, org, (registry, namespace, name))
    return Response(status_code=204)


# versions ------------------------------------------------------------------------------------------
def _version_document(container: Any, provider: RegistryProvider, version: ProviderVersion) -> dict[str, Any]:
    versions = container.provider_versions
    links = {**versions.upload_links(provider, version), **versions.download_links(version)}
    return serialize_version(provider, version, links)


@router.get(VERSIONS)
def list_registry_provider_versions(
    org: str,
    registry: str,
    namespace: str,
    name: str,
    request: Request,
    container: ContainerDep,
    principal: PrincipalDep,
) -> JSONAPIResponse:
    provider = container.provider_versions.provider(principal, org, (registry, namespace, name))
    return respond_page(request, list(provider.versions), lambda v: _version_document(container, provider, v))


@router.post(VERSIONS, openapi_extra=integration_bodies.REGISTRY_PROVIDER_VERSION)
def create_registry_provider_version(
    org: str, registry: str, namespace: str, name: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    data = _untyped(body, INCLUDE_VERSIONS)
    provider, version = container.provider_versions.create(
        principal, org, (registry, namespace, name), attributes(data)
    )
    return respond(_version_document(container, provider, version), 201)


@router.get(VERSIONS + "/{version}")
def read_registry_provider_version(
    org: str, registry: str, namespace: str, name: str, version: str, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    provider, found = container.provider_versions.read(principal, org, (registry, namespace, name), version)
    return respond(_version_document(container, provider, found))


@router.delete(VERSIONS + "/{version}")
def delete_registry_provider_version(
    org: str, registry: str, namespace: str, name: str, version: str, container: ContainerDep, principal: PrincipalDep
) -> Response:
    container.provider_versions.delete(principal, org, (registry, namespace, name), version)
    return Response(status_code=204)


# platforms -----------------------------------------------------------------------------------------
def _platform_document(container: Any, provider: RegistryProvider, platform: ProviderPlatform) -> dict[str, Any]:
    platforms = container.provider_platforms
    links = {**platforms.upload_link(provider, platform), **platforms.download_link(platform)}
    return serialize_platform(platform, links, provider.can_manage)


@router.get(PLATFORMS)
def list_registry_provider_platforms(
    org: str,
    registry: str,
    namespace: str,
    name: str,
    version: str,
    request: Request,
    container: ContainerDep,
    principal: PrincipalDep,
) -> JSONAPIResponse:
    provider, found = container.provider_platforms.list(principal, org, (registry, namespace, name), version)
    return respond_page(request, found, lambda p: _platform_document(container, provider, p))


@router.post(PLATFORMS, openapi_extra=integration_bodies.REGISTRY_PROVIDER_PLATFORM)
def create_registry_provider_platform(
    org: str,
    registry: str,
    namespace: str,
    name: str,
    version: str,
    body: JSONBody,
    container: ContainerDep,
    principal: PrincipalDep,
) -> JSONAPIResponse:
    data = _untyped(body, "registry-provider-platforms")
    address = (registry, namespace, name)
    provider, platform = container.provider_platforms.create(principal, org, address, version, attributes(data))
    return respond(_platform_document(container, provider, platform), 201)


@router.get(PLATFORMS + "/{os}/{arch}")
def read_registry_provider_platform(
    org: str,
    registry: str,
    namespace: str,
    name: str,
    version: str,
    os: str,
    arch: str,
    container: ContainerDep,
    principal: PrincipalDep,
) -> JSONAPIResponse:
    address = (registry, namespace, name)
    provider, platform = container.provider_platforms.read(principal, org, address, version, (os, arch))
    return respond(_platform_document(container, provider, platform))


@router.delete(PLATFORMS + "/{os}/{arch}")
def delete_registry_provider_platform(
    org: str,
    registry: str,
    namespace: str,
    name: str,
    version: str,
    os: str,
    arch: str,
    container: ContainerDep,
    principal: PrincipalDep,
) -> Response:
    container.provider_platforms.delete(principal, org, (registry, namespace, name), version, (os, arch))
    return Response(status_code=204)
