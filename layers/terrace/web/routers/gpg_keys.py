"""GPG keys of the private provider registry (go-tfe's `gpg_key.go`): `/api/registry/:registry/v2/gpg-keys`
(list with `filter[namespace]`, create) and `.../:namespace/:key_id` (read, update — a move to another namespace —,
delete). Only the `private` registry has keys."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from terrace.domain.registry_providers import GPGKey
from terrace.web import integration_bodies
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import JSONAPIResponse, JSONBody, attributes, read_document, resource, respond, respond_page

router = APIRouter(prefix="/api/registry/{registry}/v2/gpg-keys")


def serialize(key: GPGKey) -> dict[str, Any]:
    return resource(
        "gpg-keys",
        key.id,
        {
            "ascii-armor": key.ascii_armor,
            "created-at": key.created_at,
            "key-id": key.key_id,
            "namespace": key.namespace,
            "source": "",
            "source-url": None,
            "trust-signature": "",
            "updated-at": key.updated_at,
        },
        links={"self": f"/api/registry/private/v2/gpg-keys/{key.namespace}/{key.key_id}"},
    )


@router.get("")
def list_gpg_keys(registry: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    """`filter[namespace]`: repeated (go-tfe) or comma-separated (HCP Terraform's documentation)."""
    namespaces = [n for value in request.query_params.getlist("filter[namespace]") for n in value.split(",") if n]
    return respond_page(request, container.gpg_keys.list(principal, registry, namespaces), serialize)


@router.post("", openapi_extra=integration_bodies.GPG_KEY)
def create_gpg_key(registry: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    data = read_document(body, "gpg-keys")
    return respond(serialize(container.gpg_keys.create(principal, registry, attributes(data))), 201)


@router.get("/{namespace}/{key_id}")
def read_gpg_key(
    registry: str, namespace: str, key_id: str, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    return respond(serialize(container.gpg_keys.read(principal, registry, namespace, key_id)))


@router.patch("/{namespace}/{key_id}", openapi_extra=integration_bodies.GPG_KEY_UPDATE)
def update_gpg_key(
    registry: str, namespace: str, key_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    data = read_document(body, "gpg-keys")
    key = container.gpg_keys.update(principal, registry, namespace, key_id, attributes(data))
    return respond(serialize(key))


@router.delete("/{namespace}/{key_id}")
def delete_gpg_key(
    registry: str, namespace: str, key_id: str, container: ContainerDep, principal: PrincipalDep
) -> Response:
    container.gpg_keys.delete(principal, registry, namespace, key_id)
    return Response(status_code=204)
