"""/api/v2/account/details and user authentication tokens."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from terrace.domain import limits
from terrace.domain.errors import NotFound
from terrace.domain.principal import Principal, PrincipalKind
from terrace.web import bodies, serializers
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import JSONAPIResponse, JSONBody, attributes, read_document, respond, respond_page

router = APIRouter(prefix="/api/v2")


def _own_user(principal: Principal, user_id: str) -> None:
    if principal.kind is not PrincipalKind.USER or (principal.subject_id != user_id and not principal.site_admin):
        raise NotFound(f"user {user_id} not found")


@router.get("/account/details")
def account_details(container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    if principal.kind is PrincipalKind.USER:
        return respond(serializers.user(container.accounts.get_user(principal.subject_id)))
    return respond(serializers.principal_as_user(principal))


@router.get("/users/{user_id}")
def read_user(user_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    _own_user(principal, user_id)
    return respond(serializers.user(container.accounts.get_user(user_id)))


@router.get("/users/{user_id}/authentication-tokens")
def list_user_tokens(
    user_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    _own_user(principal, user_id)
    return respond_page(request, container.accounts.list_tokens(user_id), serializers.token)


@router.post("/users/{user_id}/authentication-tokens", openapi_extra=bodies.TOKEN)
def create_user_token(
    user_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    _own_user(principal, user_id)
    user = container.accounts.get_user(user_id)
    attrs = attributes(read_document(body, "authentication-tokens"))
    description = limits.text(attrs.get("description") or "", "description", limits.DESCRIPTION_MAX)
    issued = container.accounts.issue_token(PrincipalKind.USER, user.id, description=description)
    return respond(serializers.token(issued.token, issued.secret), 201)


@router.get("/authentication-tokens/{token_id}")
def read_token(token_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    token = container.accounts.get_token(token_id)
    _own_user(principal, token.subject_id)
    return respond(serializers.token(token))


@router.delete("/authentication-tokens/{token_id}")
def delete_token(token_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    token = container.accounts.get_token(token_id)
    _own_user(principal, token.subject_id)
    container.accounts.revoke_token(token_id)
    return Response(status_code=204)
