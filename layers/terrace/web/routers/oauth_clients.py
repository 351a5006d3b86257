"""/api/v2 OAuth clients of an organization and their OAuth tokens (HCP's VCS providers). Credentials go in,
never out: `secret` is always null, a token shows only whether it has an SSH key."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from terrace.domain.errors import Invalid
from terrace.domain.vcs import OAuthClient, OAuthToken
from terrace.web import bodies, integration_bodies
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import (
    JSONAPIResponse,
    JSONBody,
    attributes,
    includes,
    read_document,
    ref,
    refs,
    resource,
    respond,
    respond_page,
)

router = APIRouter(prefix="/api/v2")


def serialize_client(client: OAuthClient, base_url: str = "") -> dict[str, Any]:
    attrs = {
        "name": client.name,
        "created-at": client.created_at,
        "callback-url": f"{base_url}/auth/{client.id}/callback",
        "connect-path": f"/auth/{client.id}?organization_id={client.organization}",
        "service-provider": client.service_provider,
        "service-provider-display-name": client.display_name,
        "http-url": client.http_url,
        "api-url": client.api_url,
        "key": client.key,
        "secret": None,
        "rsa-public-key": client.rsa_public_key,
        "organization-scoped": client.organization_scoped,
    }
    relationships = {
        "organization": ref("organizations", client.organization),
        "oauth-tokens": refs("oauth-tokens", client.token_ids),
        "projects": refs("projects", client.projects),
        "agent-pool": ref("agent-pools", None),
    }
    return resource(
        "oauth-clients", client.id, attrs, relationships, links={"self": f"/api/v2/oauth-clients/{client.id}"}
    )


def serialize_token(token: OAuthToken) -> dict[str, Any]:
    attrs = {
        "uid": token.id,
        "created-at": token.created_at,
        "has-ssh-key": token.has_ssh_key,
        "service-provider-user": token.service_provider_user,
    }
    relationships = {"oauth-client": ref("oauth-clients", token.client_id)}
    return resource("oauth-tokens", token.id, attrs, relationships, links={"self": f"/api/v2/oauth-tokens/{token.id}"})


def _included(request: Request, container: Any, principal: Any, clients: list[OAuthClient]) -> dict[str, Any]:
    if "oauth_tokens" not in includes(request):
        return {}
    return {"included": [serialize_token(t) for t in container.oauth_clients.tokens_of(principal, clients)]}


def _project_ids(body: Any) -> list[str]:
    """The `{data: [{type: projects, id}]}` of a relationship request, or `data.relationships.projects`."""
    data = body.get("data") if isinstance(body, dict) else None
    if isinstance(data, dict):
        data = (data.get("relationships") or {}).get("projects", {}).get("data")
    if data is None:
        return []
    if not isinstance(data, list) or not all(isinstance(p, dict) and isinstance(p.get("id"), str) for p in data):
        raise Invalid("projects must be a list of {type: projects, id}", pointer="/data")
    return [p["id"] for p in data]


@router.get("/organizations/{org}/oauth-clients")
def list_oauth_clients(org: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    clients = container.oauth_clients.list(principal, org)
    base = container.settings.public_url
    return respond_page(request, clients, lambda c: serialize_client(c, base),
                        **_included(request, container, principal, clients))  # fmt: skip


@router.post("/organizations/{org}/oauth-clients", openapi_extra=integration_bodies.OAUTH_CLIENT)
def create_oauth_client(org: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    data = read_document(body, "oauth-clients")
    client = container.oauth_clients.create(principal, org, attributes(data), _project_ids(body))
    return respond(serialize_client(client, container.settings.public_url), 201)


@router.get("/oauth-clients/{client_id}")
def read_oauth_client(
    client_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    client = container.oauth_clients.get(principal, client_id)
    extra = _included(request, container, principal, [client])
    return respond(serialize_client(client, container.settings.public_url), **extra)


@router.patch("/oauth-clients/{client_id}", openapi_extra=integration_bodies.OAUTH_CLIENT_UPDATE)
def update_oauth_client(
    client_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    data = read_document(body, "oauth-clients")
    client = container.oauth_clients.update(principal, client_id, attributes(data))
    return respond(serialize_client(client, container.settings.public_url))


@router.delete("/oauth-clients/{client_id}")
def delete_oauth_client(client_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.oauth_clients.delete(principal, client_id)
    return Response(status_code=204)


@router.post("/oauth-clients/{client_id}/relationships/projects", openapi_extra=bodies.PROJECT_REFS)
def add_oauth_client_projects(
    client_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> Response:
    container.oauth_clients.change_projects(principal, client_id, _project_ids(body), add=True)
    return Response(status_code=204)


@router.delete("/oauth-clients/{client_id}/relationships/projects", openapi_extra=bodies.PROJECT_REFS)
def remove_oauth_client_projects(
    client_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> Response:
    container.oauth_clients.change_projects(principal, client_id, _project_ids(body), add=False)
    return Response(status_code=204)


@router.get("/oauth-clients/{client_id}/oauth-tokens")
def list_oauth_tokens(
    client_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    return respond_page(request, container.oauth_clients.tokens(principal, client_id), serialize_token)


@router.get("/oauth-tokens/{oauth_token_id}")
def read_oauth_token(oauth_token_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond(serialize_token(container.oauth_clients.token(principal, oauth_token_id)))


@router.patch("/oauth-tokens/{oauth_token_id}", openapi_extra=integration_bodies.OAUTH_TOKEN_UPDATE)
def update_oauth_token(
    oauth_token_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    data = read_document(body, "oauth-tokens")
    return respond(serialize_token(container.oauth_clients.update_token(principal, oauth_token_id, attributes(data))))


@router.delete("/oauth-tokens/{oauth_token_id}")
def delete_oauth_token(oauth_token_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.oauth_clients.delete_token(principal, oauth_token_id)
    return Response(status_code=204)
