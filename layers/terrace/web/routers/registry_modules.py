"""/api/v2 private registry modules (go-tfe's `registry_module.go`): create, read, list, versions published
through the API (`links.upload` for the tarball), deletes of a version, a provider and a whole module."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request, Response

from terrace.domain.no_code_modules import NoCodeModule
from terrace.domain.registry_modules import ModuleVersion, RegistryModule, revocation_document
from terrace.web import integration_bodies
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import JSONAPIResponse, JSONBody, attributes, paginate, read_document, resource, respond

router = APIRouter(prefix="/api/v2")
MODULES = "/organizations/{org}/registry-modules"
ONE = MODULES + "/{registry}/{namespace}/{name}/{provider}"


def serialize(module: RegistryModule, no_code: NoCodeModule | None = None) -> dict[str, Any]:
    """A module; `no_code` its no-code designation (`no-code` is whether it has an enabled one)."""
    statuses = [{"version": v.version, "status": v.status, "error": v.error or ""} for v in module.versions]
    return resource(
        "registry-modules",
        module.id,
        {
            "name": module.name,
            "provider": module.provider,
            "registry-name": module.registry_name,
            "namespace": module.namespace,
            "no-code": bool(no_code and no_code.enabled),
            # resync and retry (a VCS module's) amount to publishing again: the caller's `manage-modules`
            "permissions": dict.fromkeys(("can-delete", "can-resync", "can-retry"), module.can_manage),
            "status": module.status,
            "vcs-repo": module.vcs_repo,  # services/vcs/connections.py
            "publishing-mechanism": module.publishing_mechanism,
            "version-statuses": statuses,
            "revoked-versions": [v.version for v in module.versions if v.revocation is not None],
            "created-at": module.created_at,
            "updated-at": module.updated_at,
        },
        relationships={
            "organization": {"data": {"id": module.organization_name, "type": "organizations"}},
            "no-code-modules": {"data": [{"type": "no-code-modules", "id": no_code.id}] if no_code else []},
        },
        links={"self": f"/api/v2/registry-modules/{module.id}"},
    )


def serialize_version(module: RegistryModule, version: ModuleVersion, upload_url: str | None) -> dict[str, Any]:
    links = {"upload": upload_url} if upload_url else {}
    return resource(
        "registry-module-versions",
        version.id,
        {
            "source": version.source,
            "commit-sha": version.commit_sha,
            "status": version.status,
            "version": version.version,
            "error": version.error,
            "created-at": version.created_at,
            "updated-at": version.updated_at,
            "revocation": revocation_document(version),
        },
        relationships={"registry-module": {"data": {"id": module.id, "type": "registry-modules"}}},
        links=links,
    )


@router.get(MODULES)
def list_registry_modules(
    org: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    params = request.query_params
    filters = {
        "q": params.get("q", ""),
        "registry_name": params.get("filter[registry_name]", ""),
        "provider": params.get("filter[provider]", ""),
    }
    page, meta, links = paginate(request, container.registry_modules.list(principal, org, filters))
    no_code = {m.id: container.no_code_modules.of_module(m) for m in page}
    included = []
    if "no-code-modules" in params.get("include", "").split(","):
        from terrace.web.routers import no_code_modules as no_code_doc  # (its routes: lazy)

        included = [no_code_doc.serialize(n, m) for m in page if (n := no_code[m.id]) is not None]
    return respond([serialize(m, no_code[m.id]) for m in page], meta=meta, links=links, included=included)


@router.post(MODULES, openapi_extra=integration_bodies.REGISTRY_MODULE)
def create_registry_module(
    org: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    data = read_document(body, "registry-modules")
    module = container.no_code_modules.create_module(principal, org, attributes(data))
    return respond(serialize(module, container.no_code_modules.of_module(module)), 201)


@router.post(MODULES + "/vcs", openapi_extra=integration_bodies.REGISTRY_MODULE)
def create_registry_module_from_vcs(
    org: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    """A module published from a repository (`vcs-repo`: identifier, oauth-token-id, branch or tags)."""
    data = read_document(body, "registry-modules")
    return respond(serialize(container.registry_modules.create_from_vcs(principal, org, attributes(data))), 201)


@router.get("/registry-modules/{module_id}")
def read_registry_module_by_id(module_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    module = container.registry_modules.get_by_id(principal, module_id)
    return respond(serialize(module, container.no_code_modules.of_module(module)))


@router.get(ONE)
def read_registry_module(
    org: str, registry: str, namespace: str, name: str, provider: str, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    module = container.registry_modules.get(principal, org, (registry, namespace, name, provider))
    return respond(serialize(module, container.no_code_modules.of_module(module)))


def _create_version(
    container: Any, principal: Any, org: str, address: tuple[str, str, str], body: Any
) -> JSONAPIResponse:
    data = read_document(body, "registry-module-versions")
    module, version, upload_url = container.module_sources.create_version(principal, org, address, attributes(data))
    return respond(serialize_version(module, version, upload_url), 201)


@router.post(
    MODULES + "/private/{namespace}/{name}/{provider}/versions",
    openapi_extra=integration_bodies.REGISTRY_MODULE_VERSION,
)
def create_registry_module_version(
    org: str, namespace: str, name: str, provider: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    return _create_version(container, principal, org, (namespace, name, provider), body)


@router.post(
    "/registry-modules/{org}/{name}/{provider}/versions", openapi_extra=integration_bodies.REGISTRY_MODULE_VERSION
)
def create_registry_module_version_legacy(
    org: str, name: str, provider: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    """go-tfe's `CreateVersion` (the older path, without the namespace)."""
    return _create_version(container, principal, org, (org, name, provider), body)


@router.get(MODULES + "/private/{namespace}/{name}/{provider}/version")
def read_registry_module_version(
    org: str,
    namespace: str,
    name: str,
    provider: str,
    container: ContainerDep,
    principal: PrincipalDep,
    module_version: str = Query(""),
) -> JSONAPIResponse:
    versions = container.module_versions
    module, version = versions.read(principal, org, (namespace, name, provider), module_version)
    return respond(serialize_version(module, version, versions.upload_url(module, version)))


@router.delete(MODULES + "/{registry}/{namespace}/{name}")
def delete_registry_module(
    org: str, registry: str, namespace: str, name: str, container: ContainerDep, principal: PrincipalDep
) -> Response:
    container.registry_modules.delete_named(principal, org, registry, namespace, name)
    return Response(status_code=204)


@router.delete(ONE)
def delete_registry_module_provider(
    org: str, registry: str, namespace: str, name: str, provider: str, container: ContainerDep, principal: PrincipalDep
) -> Response:
    container.registry_modules.delete(principal, org, (registry, namespace, name, provider))
    return Response(status_code=204)


@router.patch(MODULES + "/private/{namespace}/{name}/{provider}/{version}")
def change_registry_module_version(
    org: str, namespace: str, name: str, provider: str, version: str, body: JSONBody, container: ContainerDep,
    principal: PrincipalDep,
) -> JSONAPIResponse:  # fmt: skip
    """HCP Terraform's manage module versions API: `deprecation` (`deprecated-status` Deprecated or Undeprecated),
    answered as a module version with its deprecation; `revocation` (`status` Revoked or Unrevoked), answered as a
    registry module version with its `revocation`."""
    attrs = attributes(read_document(body, ("module-versions", "registry-module-versions")))
    module, found = container.module_versions.change_lifecycle(
        principal, org, (namespace, name, provider), version, attrs
    )
    if "revocation" in attrs:
        return respond(serialize_version(module, found, None))
    deprecation = found.deprecation
    relationships = {"deprecation": {"data": {"type": "deprecations", "id": found.id} if deprecation else None}}
    included = [resource("deprecations", found.id, dict(deprecation))] if deprecation else []
    return respond(resource("module-versions", found.id, {"version": found.version}, relationships), included=included)


@router.delete(ONE + "/{version}")
def delete_registry_module_version(
    org: str,
    registry: str,
    namespace: str,
    name: str,
    provider: str,
    version: str,
    container: ContainerDep,
    principal: PrincipalDep,
) -> Response:
    container.module_versions.delete(principal, org, (registry, namespace, name, provider), version)
    return Response(status_code=204)


@router.post("/registry-modules/actions/delete/{org}/{name}")
def delete_registry_module_legacy(org: str, name: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    """go-tfe's deprecated `Delete`: every module of that name, every provider."""
    container.registry_modules.delete_named(principal, org, None, None, name)
    return Response(status_code=204)


@router.post("/registry-modules/actions/delete/{org}/{name}/{provider}")
def delete_registry_module_provider_legacy(
    org: str, name: str, provider: str, container: ContainerDep, principal: PrincipalDep
) -> Response:
    """go-tfe's older `DeleteProvider` (a private module's provider and its versions)."""
    container.registry_modules.delete(principal, org, ("private", org, name, provider))
    return Response(status_code=204)


@router.post("/registry-modules/actions/delete/{org}/{name}/{provider}/{version}")
def delete_registry_module_version_legacy(
    org: str, name: str, provider: str, version: str, container: ContainerDep, principal: PrincipalDep
) -> Response:
    """go-tfe's older `DeleteVersion`."""
    container.module_versions.delete(principal, org, ("private", org, name, provider), version)
    return Response(status_code=204)
