"""/api/v2 organization memberships and organization tokens."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from terrace.domain.errors import BadRequest, Invalid
from terrace.domain.organizations import Organization
from terrace.domain.token_ttl_policies import TokenTTLPolicy
from terrace.services.access.documents import MembershipDocuments
from terrace.web import access_serializers, serializers
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import (
    JSONAPIResponse,
    JSONBody,
    attributes,
    paginate,
    read_document,
    relationship_id,
    resource,
    respond,
)
from terrace.web.routers.teams import serialize as serialize_team
from terrace.web.routers.teams import token_options

router = APIRouter(prefix="/api/v2")
INCLUDES = ("user", "teams")


def _includes(request: Request) -> set[str]:
    wanted = {part.strip() for part in (request.query_params.get("include") or "").split(",") if part.strip()}
    unknown = wanted - set(INCLUDES)
    if unknown:
        raise BadRequest(f"Invalid include parameter: {', '.join(sorted(unknown))} (takes {', '.join(INCLUDES)})")
    return wanted


def _documents(documents: MembershipDocuments) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    org = documents.organization
    data = [access_serializers.membership(i.membership, org, i.team_ids) for i in documents.memberships]
    included = [serializers.user(u) for u in documents.users] + [serialize_team(t) for t in documents.teams]
    return data, included


@router.get("/organizations/{org}/organization-memberships")
def list_memberships(org: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    params = request.query_params
    emails = [e for e in (params.get("filter[email]") or "").split(",") if e]
    members = container.memberships.list(
        principal, org, emails or None, params.get("filter[status]") or None, params.get("q") or None
    )
    page, meta, links = paginate(request, members)
    data, included = _documents(container.access_documents.of_memberships(principal, page, _includes(request)))
    return respond(data, meta=meta, links=links, included=included)


@router.post("/organizations/{org}/organization-memberships")
def invite(org: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    data = read_document(body, "organization-memberships")
    attrs = attributes(data)
    username = relationship_id(data, "user", "users")
    teams_rel = (data.get("relationships") or {}).get("teams")
    refs = teams_rel.get("data") if isinstance(teams_rel, dict) else None
    if refs is not None and not (isinstance(refs, list) and all(isinstance(r, dict) for r in refs)):
        raise Invalid("relationships.teams must be {data: [{type: teams, id}]}", pointer="/data/relationships/teams")
    if username is not None:  # an existing account: invited unseen, whether it exists or not
        if refs:
            raise Invalid("an invitation by username joins no team before it is accepted",
                          pointer="/data/relationships/teams")  # fmt: skip
        container.memberships.invite_user(principal, org, username)
        return respond(None, 202, meta={"detail": f"if {username} names an account, it is invited to {org} "
                                                  "and joins when it accepts"})  # fmt: skip
    team_ids = [str(ref.get("id")) for ref in refs or []]
    member = container.memberships.invite_into_teams(principal, org, attrs.get("email"), team_ids)
    docs, included = _documents(container.access_documents.of_memberships(principal, [member], {"user"}))
    return respond(docs[0], 201, included=included)


@router.get("/organization-memberships")
def own_memberships(container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    """The caller's own memberships and invitations, in every organization (HCP Terraform's list of a user's)."""
    members = container.memberships.own(principal)
    names = {key: container.organizations.name_of(key) for key in {m.organization for m in members}}
    return respond([access_serializers.membership(m, names[m.organization], []) for m in members])


@router.post("/organization-memberships/{membership_id}/actions/accept")
def accept_membership(membership_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    member = container.memberships.accept(principal, membership_id)
    return respond(access_serializers.membership(member, container.organizations.name_of(member.organization), []))


@router.get("/organization-memberships/{membership_id}")
def read_membership(
    membership_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    member = container.memberships.get(principal, membership_id)
    docs, included = _documents(container.access_documents.of_memberships(principal, [member], _includes(request)))
    return respond(docs[0], included=included)


@router.delete("/organization-memberships/{membership_id}")
def delete_membership(membership_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.memberships.delete(principal, membership_id)
    return Response(status_code=204)


# organization token ----------------------------------------------------------------------------
@router.post("/organizations/{org}/authentication-token")
def create_organization_token(
    org: str, request: Request, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> Any:
    attrs, kind = token_options(body), request.query_params.get("token")  # go-tfe's token type
    issued = container.service_tokens.create_organization_token(principal, org, attrs.get("expired-at"), kind)
    return respond(serializers.token(issued.token, issued.secret), 201)


@router.get("/organizations/{org}/authentication-token")
def read_organization_token(
    org: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    kind = request.query_params.get("token")
    return respond(serializers.token(container.service_tokens.organization_token(principal, org, kind)))


@router.delete("/organizations/{org}/authentication-token")
def delete_organization_token(org: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.service_tokens.delete_organization_token(principal, org, request.query_params.get("token"))
    return Response(status_code=204)


# token TTL policies ------------------------------------------------------------------------------
def _ttl_policies(org: Organization, policies: list[TokenTTLPolicy]) -> JSONAPIResponse:
    return respond([
        resource("organization-token-ttl-policies", f"ttlpol-{org.id.removeprefix('org-')}-{p.token_type}",
                 {"token-type": p.token_type, "max-ttl-ms": p.max_ttl_ms, "created-at": p.created_at,
                  "updated-at": p.updated_at})
        for p in policies
    ])  # fmt: skip


@router.get("/organizations/{org}/token-ttl-policies")
def list_token_ttl_policies(org: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return _ttl_policies(*container.token_ttl_policies.list(principal, org))


@router.patch("/organizations/{org}/token-ttl-policies")
def update_token_ttl_policies(org: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Any:
    attrs = attributes(read_document(body, "organization-token-ttl-policies"))
    return _ttl_policies(*container.token_ttl_policies.update(principal, org, attrs.get("token-ttl-policies")))
