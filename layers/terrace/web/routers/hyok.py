"""/api/v2 Hold Your Own Key (HCP Terraform's shapes, go-tfe's `*OIDCConfigurations`, `HYOKConfigurations`,
`HYOKCustomerKeyVersions`, `HYOKEncryptedDataKeys`): OIDC configurations, HYOK configurations with their test
and revocation, customer key versions and encrypted data keys. The services are `services/hyok/`."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from terrace.bootstrap import Container
from terrace.domain import hyok as model
from terrace.domain.errors import Invalid
from terrace.domain.principal import Principal
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.hyok_serializers import data_key_document, hyok_document, key_version_document, oidc_document
from terrace.web.jsonapi import (
    JSONAPIResponse,
    JSONBody,
    attributes,
    includes,
    read_document,
    relationship_id,
    respond,
    respond_page,
)

router = APIRouter(prefix="/api/v2")
OIDC_TYPES = tuple(sorted(model.BY_TYPE))


def _oidc(container: Container, oidc: model.OidcConfiguration) -> dict[str, Any]:
    return oidc_document(oidc, container.oidc_configurations.organization_name(oidc))


@router.get("/organizations/{org}/oidc-configurations")
def list_oidc_configurations(
    org: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    found = container.oidc_configurations.list(principal, org)
    return respond_page(request, found, lambda oidc: _oidc(container, oidc))


@router.post("/organizations/{org}/oidc-configurations", status_code=201)
def create_oidc_configuration(
    org: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    data = read_document(body, OIDC_TYPES)
    oidc = container.oidc_configurations.create(principal, org, data["type"], attributes(data))
    return respond(_oidc(container, oidc), 201)


@router.get("/oidc-configurations/{oidc_id}")
def show_oidc_configuration(oidc_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond(_oidc(container, container.oidc_configurations.get(principal, oidc_id)))


@router.patch("/oidc-configurations/{oidc_id}")
def update_oidc_configuration(
    oidc_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    data = read_document(body, OIDC_TYPES)
    oidc = container.oidc_configurations.update(principal, oidc_id, data["type"], attributes(data))
    return respond(_oidc(container, oidc))


@router.delete("/oidc-configurations/{oidc_id}")
def delete_oidc_configuration(oidc_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.oidc_configurations.delete(principal, oidc_id)
    return Response(status_code=204)


def _hyok(
    container: Container, principal: Principal, hyok: model.HyokConfiguration, request: Request | None = None
) -> JSONAPIResponse:
    organization, key_versions = container.hyok_configurations.details(hyok)
    included = []
    wanted = includes(request) if request is not None else frozenset()
    if "hyok_customer_key_versions" in wanted:
        included += [key_version_document(k) for k in key_versions]
    if "oidc_configuration" in wanted:
        oidc = container.hyok_configurations.oidc_of(hyok)
        included += [oidc_document(oidc, organization)] if oidc else []
    return respond(hyok_document(hyok, organization, key_versions), included=included)


def _hyok_relationships(data: dict[str, Any]) -> tuple[str | None, str | None]:
    oidc = (data.get("relationships") or {}).get("oidc-configuration")
    inner = oidc.get("data") if isinstance(oidc, dict) else None
    if oidc is not None and inner is not None and (not isinstance(inner, dict) or inner.get("type") not in OIDC_TYPES):
        raise Invalid(
            "oidc-configuration must point at an OIDC configuration", pointer="/data/relationships/oidc-configuration"
        )
    oidc_id = relationship_id(data, "oidc-configuration")
    return oidc_id, relationship_id(data, "agent-pool", "agent-pools")


@router.get("/organizations/{org}/hyok-configurations")
def list_hyok_configurations(
    org: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    found = container.hyok_configurations.list(principal, org, request.query_params.get("q"))
    return respond_page(request, found, lambda hyok: hyok_document(hyok, *container.hyok_configurations.details(hyok)))


@router.post("/organizations/{org}/hyok-configurations", status_code=201)
def create_hyok_configuration(
    org: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    data = read_document(body, "hyok-configurations")
    oidc_id, pool_id = _hyok_relationships(data)
    hyok = container.hyok_configurations.create(principal, org, attributes(data), oidc_id, pool_id)
    answer = _hyok(container, principal, hyok)
    answer.status_code = 201
    return answer


@router.get("/hyok-configurations/{hyok_id}")
def show_hyok_configuration(
    hyok_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    return _hyok(container, principal, container.hyok_configurations.get(principal, hyok_id), request)


@router.patch("/hyok-configurations/{hyok_id}")
def update_hyok_configuration(
    hyok_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    data = read_document(body, "hyok-configurations")
    if relationship_id(data, "oidc-configuration"):
        raise Invalid(
            "a HYOK configuration's OIDC configuration cannot change", pointer="/data/relationships/oidc-configuration"
        )
    pool_id = relationship_id(data, "agent-pool", "agent-pools")
    return _hyok(
        container, principal, container.hyok_configurations.update(principal, hyok_id, attributes(data), pool_id)
    )


@router.delete("/hyok-configurations/{hyok_id}")
def delete_hyok_configuration(hyok_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.hyok_configurations.delete(principal, hyok_id)
    return Response(status_code=204)


@router.post("/hyok-configurations/{hyok_id}/actions/test")
def test_hyok_configuration(hyok_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return _hyok(container, principal, container.hyok_configurations.test(principal, hyok_id))


@router.post("/hyok-configurations/{hyok_id}/actions/revoke", status_code=202)
def revoke_hyok_configuration(hyok_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    answer = _hyok(container, principal, container.hyok_configurations.revoke(principal, hyok_id))
    answer.status_code = 202
    return answer


@router.get("/hyok-configurations/{hyok_id}/hyok-customer-key-versions")
def list_key_versions(
    hyok_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    return respond_page(request, container.hyok_key_versions.list(principal, hyok_id), key_version_document)


@router.get("/hyok-customer-key-versions/{key_version_id}")
def show_key_version(key_version_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    key = container.hyok_key_versions.get(principal, key_version_id)
    return respond(key_version_document(key, container.hyok_key_versions.data_key_ids(key)))


@router.post("/hyok-customer-key-versions/{key_version_id}/actions/revoke", status_code=202)
def revoke_key_version(key_version_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond(key_version_document(container.hyok_key_versions.revoke(principal, key_version_id)), 202)


@router.delete("/hyok-customer-key-versions/{key_version_id}")
def delete_key_version(key_version_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.hyok_key_versions.delete(principal, key_version_id)
    return Response(status_code=204)


@router.get("/hyok-encrypted-data-keys/{data_key_id}")
def show_data_key(data_key_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond(data_key_document(container.hyok_key_versions.data_key(principal, data_key_id)))
