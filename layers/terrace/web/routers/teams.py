"""/api/v2 teams: CRUD, members (by username or organization membership), team tokens."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from terrace.bootstrap import Container
from terrace.domain.errors import Invalid, NotFound
from terrace.domain.principal import Principal
from terrace.domain.teams import Team
from terrace.services.access.authz import Action
from terrace.services.access.documents import TeamDocument, TeamDocuments
from terrace.web import access_serializers, serializers
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.documents import resource_ids
from terrace.web.jsonapi import JSONAPIResponse, JSONBody, attributes, read_document, respond, respond_page

router = APIRouter(prefix="/api/v2")


def _includes(request: Request) -> set[str]:
    return {part.strip() for part in (request.query_params.get("include") or "").split(",") if part.strip()}


def serialize(document: TeamDocument) -> dict[str, Any]:
    d = document
    return access_serializers.team(d.team, d.organization, d.membership_ids, d.can_manage)


def respond_team(documents: TeamDocuments, status: int = 200) -> JSONAPIResponse:
    included = [serializers.user(u) for u in documents.users] + [
        access_serializers.membership(i.membership, documents.documents[0].organization, i.team_ids)
        for i in documents.memberships
    ]
    return respond(serialize(documents.documents[0]), status, included=included)


@router.get("/organizations/{org}/teams")
def list_teams(org: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    names = [n for n in (request.query_params.get("filter[names]") or "").split(",") if n]
    documents = container.access_documents.of_organization(
        principal, org, names or None, request.query_params.get("q") or None
    )
    return respond_page(request, documents.documents, serialize)


@router.post("/organizations/{org}/teams")
def create_team(org: str, body: JSONBody, request: Request, container: ContainerDep, principal: PrincipalDep) -> Any:
    team = container.teams.create(principal, org, attributes(read_document(body, "teams")))
    return respond_team(container.access_documents.of_team(principal, team, _includes(request)), 201)


@router.get("/teams/{team_id}")
def read_team(team_id: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> Any:
    team = container.teams.get(principal, team_id)
    return respond_team(container.access_documents.of_team(principal, team, _includes(request)))


@router.patch("/teams/{team_id}")
def update_team(
    team_id: str, body: JSONBody, request: Request, container: ContainerDep, principal: PrincipalDep
) -> Any:
    team = container.teams.update(principal, team_id, attributes(read_document(body, "teams")))
    return respond_team(container.access_documents.of_team(principal, team, _includes(request)))


@router.delete("/teams/{team_id}")
def delete_team(team_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.teams.delete(principal, team_id)  # its tokens die with it (`TeamService.after_delete`)
    return Response(status_code=204)


# members ---------------------------------------------------------------------------------------
def _refs(body: Any, type_: str) -> list[str]:
    return resource_ids(body, type_, untyped=False)


def _user_ids(container: Container, principal: Principal, team: Team, body: Any, by: str) -> set[str]:
    """The users a member list names: usernames, or organization membership ids of the team's organization."""
    if by == "users":  # members of the organization (invited ones too), never anyone else
        return {container.memberships.visible_member(team.organization, name) for name in _refs(body, "users")}
    ids = set()
    for membership_id in _refs(body, "organization-memberships"):
        member = container.memberships.get(principal, membership_id)
        if member.organization != team.organization:
            raise NotFound(f"organization membership {membership_id} not found")
        ids.add(member.user_id)
    return ids


def _change_members(
    team_id: str, body: Any, container: Container, principal: Principal, by: str, add: bool
) -> Response:
    team = container.teams.get(principal, team_id, Action.MANAGE_MEMBERSHIP)
    users = _user_ids(container, principal, team, body, by)
    container.teams.set_members(principal, team, set(team.users) | users if add else set(team.users) - users)
    return Response(status_code=204)


@router.post("/teams/{team_id}/relationships/users")
def add_users(team_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Response:
    return _change_members(team_id, body, container, principal, "users", add=True)


@router.delete("/teams/{team_id}/relationships/users")
def remove_users(team_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Response:
    return _change_members(team_id, body, container, principal, "users", add=False)


@router.post("/teams/{team_id}/relationships/organization-memberships")
def add_memberships(team_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Response:
    return _change_members(team_id, body, container, principal, "memberships", add=True)


@router.delete("/teams/{team_id}/relationships/organization-memberships")
def remove_memberships(team_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Response:
    return _change_members(team_id, body, container, principal, "memberships", add=False)


# team token ------------------------------------------------------------------------------------
def token_options(body: Any) -> dict[str, Any]:
    """The attributes of a team or organization token request; go-tfe sends no `type` there (or none at all)."""
    if body is None:
        return {}
    data = body.get("data") if isinstance(body, dict) else None
    attrs = data.get("attributes") if isinstance(data, dict) else None
    if not isinstance(data, dict) or not isinstance(attrs or {}, dict):
        raise Invalid("request body must be a JSON:API document with a data object", pointer="/data")
    return dict(attrs or {})


@router.post("/teams/{team_id}/authentication-token")
def create_team_token(team_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Any:
    """The legacy token: one per team without a description, replaced by the next."""
    attrs = token_options(body)
    issued = container.team_tokens.create_legacy(principal, team_id, attrs.get("expired-at"))
    return respond(access_serializers.team_token(issued.token, issued.secret), 201)


@router.get("/teams/{team_id}/authentication-token")
def read_team_token(team_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond(access_serializers.team_token(container.team_tokens.legacy(principal, team_id)))


@router.delete("/teams/{team_id}/authentication-token")
def delete_team_token(team_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.team_tokens.delete_legacy(principal, team_id)
    return Response(status_code=204)


@router.post("/teams/{team_id}/authentication-tokens")
def create_described_team_token(
    team_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    """One of a team's described tokens (each description unique in the team)."""
    issued = container.team_tokens.create(principal, team_id, token_options(body))
    return respond(access_serializers.team_token(issued.token, issued.secret), 201)


@router.get("/teams/{team_id}/authentication-tokens")
def list_team_tokens(
    team_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    return respond_page(request, container.team_tokens.of_team(principal, team_id), access_serializers.team_token)


@router.get("/organizations/{org}/team-tokens")
def list_organization_team_tokens(
    org: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    params = request.query_params
    tokens = container.team_tokens.of_organization(principal, org, params.get("q") or "", params.get("sort") or "")
    return respond_page(request, tokens, access_serializers.team_token)
