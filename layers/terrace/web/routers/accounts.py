"""/api/v2/account/details and user authentication tokens."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Request, Response

from terrace.domain import clock, limits
from terrace.domain.errors import Invalid, NotFound
from terrace.domain.principal import Principal, PrincipalKind
from terrace.domain.tokens import default_expiry
from terrace.web import access_serializers, bodies, serializers
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import JSONAPIResponse, JSONBody, body_attributes, respond, respond_page

router = APIRouter(prefix="/api/v2")


def _own_user(principal: Principal, user_id: str) -> None:
    if principal.kind is not PrincipalKind.USER or (principal.subject_id != user_id and not principal.site_admin):
        raise NotFound(f"user {user_id} not found")


@router.get("/account/details")
def account_details(container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    if principal.kind is PrincipalKind.USER:
        user, scim = container.users.details(principal.subject_id)
        return respond(serializers.user(user, scim=scim))
    if principal.kind is PrincipalKind.ORGANIZATION and principal.organization:
        return respond(serializers.principal_as_user(principal, container.organizations.by_key(principal.organization)))
    return respond(serializers.principal_as_user(principal))


@router.patch("/account/update")
def update_account(body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    """A user's own username and email (other attributes are ignored, as TFC does)."""
    if principal.kind is not PrincipalKind.USER:
        raise NotFound("only a user token has an account to update")
    return respond(serializers.user(container.users.update(principal.subject_id, body_attributes(body))))


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
    attrs = body_attributes(body)  # go-tfe sends no data.type here
    description = limits.text(attrs.get("description") or "", "description", limits.DESCRIPTION_MAX)
    expires = _expiry(attrs.get("expired-at"))
    issued = container.accounts.issue_token(PrincipalKind.USER, user.id, description=description, expires_epoch=expires)
    return respond(serializers.token(issued.token, issued.secret), 201)


def _expiry(expired_at: Any) -> int | None:
    """`expired-at` (an ISO 8601 time) in epoch seconds; without one, HCP Terraform's default expiry
    (`tokens.default_expiry`). A client's clock may be off from the server's, so a past time is not refused: the
    token is issued already expired."""
    if expired_at is None:
        return int(default_expiry(clock.utcnow()).timestamp())
    pointer = "/data/attributes/expired-at"
    try:
        when = datetime.fromisoformat(str(expired_at).replace("Z", "+00:00"))
    except ValueError as exc:
        raise Invalid("expired-at must be an ISO 8601 time", pointer=pointer) from exc
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp())  # a time already past makes a token that never authenticates


@router.get("/authentication-tokens/{token_id}")
def read_token(token_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    """A user's own token, a team's token (to who manages the team's tokens) or an agent pool's (to who manages
    the pool)."""
    token = container.team_tokens.by_id(principal, token_id)
    if token.kind is PrincipalKind.AGENT:
        from terrace.web.routers.agent_pools import serialize_token as serialize_agent_token  # (its routes: lazy)

        return respond(serialize_agent_token(container.agent_pools.token(principal, token)))
    if token.kind is PrincipalKind.TEAM:
        return respond(access_serializers.team_token(token))
    return respond(serializers.token(token))


@router.delete("/authentication-tokens/{token_id}")
def delete_token(token_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    agent_token = container.team_tokens.revoke(principal, token_id)
    if agent_token is not None:
        container.agent_pools.revoke_token(principal, agent_token)
    return Response(status_code=204)
