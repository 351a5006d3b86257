"""/api/v2/organizations: CRUD, entitlement-set."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from terrace.domain.agent_pools import DEFAULT_POOL_SETTING
from terrace.web import bodies, resource_documents, serializers
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import (
    JSONAPIResponse,
    JSONBody,
    attributes,
    read_document,
    relationship_id,
    respond,
    respond_page,
)

router = APIRouter(prefix="/api/v2")


_serialize = resource_documents.organization
# Without page[number] or page[size], HCP answers every organization of the caller at once (its API documents
# it; go-tfe's TestOrganizationsList looks for its new organizations in `List(ctx, nil)`): up to this many.
UNPAGED_MAX = 1000


@router.get("/organizations")
def list_organizations(request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    orgs = container.organizations.list(principal)
    query = request.query_params.get("q") or request.query_params.get("query")
    if query:
        orgs = [o for o in orgs if query.lower() in o.name.lower() or query.lower() in o.email.lower()]
    return respond_page(request, orgs, lambda org: _serialize(container, principal, org), unpaged_max=UNPAGED_MAX)


@router.post("/organizations", openapi_extra=bodies.ORGANIZATION)
def create_organization(body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    attrs = attributes(read_document(body, "organizations"))
    name, email = attrs.pop("name", None), attrs.pop("email", None)
    org = container.organizations.create(principal, name, email, **attrs)
    return respond(_serialize(container, principal, org), 201)


@router.get("/organizations/{name}")
def read_organization(name: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond(_serialize(container, principal, container.organizations.settings(principal, name)))


@router.patch("/organizations/{name}", openapi_extra=bodies.ORGANIZATION)
def update_organization(name: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    data = read_document(body, "organizations")
    attrs = attributes(data)
    if "default-agent-pool" in data["relationships"]:  # `data: null` clears it
        attrs[DEFAULT_POOL_SETTING] = relationship_id(data, "default-agent-pool", "agent-pools")
    org = container.organizations.update(principal, name, attrs)
    return respond(_serialize(container, principal, org))


@router.delete("/organizations/{name}")
def delete_organization(name: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.organization_deletion.delete(principal, name)
    return Response(status_code=204)


@router.get("/organizations/{name}/entitlement-set")
def entitlement_set(name: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond(serializers.entitlement_set(container.organizations.settings(principal, name)))


@router.get("/organizations/{name}/stacks")
def list_stacks(name: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    """Stacks are not a Terrace feature (their CLI downloads HashiCorp's own plugin): an organization a caller may
    read has none. Clients list them anyway (go-tfe's test helpers, during every organization's cleanup)."""
    container.organizations.get(principal, name)
    return respond_page(request, [], lambda stack: stack)
