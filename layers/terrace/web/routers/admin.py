"""/api/v2/admin: the site admin's organizations and users (TFE's admin API). 404 to anyone but a site admin."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from terrace.domain.errors import BadRequest, Invalid
from terrace.web import admin_serializers as aser
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import JSONAPIResponse, JSONBody, body_attributes, paginate, respond

router = APIRouter(prefix="/api/v2/admin")


def includes(request: Request, allowed: frozenset[str]) -> set[str]:
    """The `include` names asked for; one this list cannot include is a 400 (as TFC answers)."""
    wanted = {part.strip() for part in (request.query_params.get("include") or "").split(",") if part.strip()}
    if wanted - allowed:
        raise BadRequest(f"Invalid include parameter: {', '.join(sorted(wanted - allowed))}")
    return wanted


# organizations ---------------------------------------------------------------------------
@router.get("/organizations")
def list_organizations(request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    orgs = container.site_admin.organizations(principal, request.query_params.get("q") or "")
    page, meta, links = paginate(request, orgs)
    included: list[dict[str, Any]] = []
    if "owners" in includes(request, frozenset({"owners"})):
        owner_ids = sorted({owner for org in page for owner in org.owners})
        included = [aser.owner(u) for u in container.accounts.get_users(owner_ids)]
    return respond([aser.organization(o) for o in page], meta=meta, links=links, included=included)


@router.get("/organizations/{name}")
def read_organization(name: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond(aser.organization(container.site_admin.organization(principal, name)))


@router.patch("/organizations/{name}")
def update_organization(name: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    attrs = body_attributes(body)
    return respond(aser.organization(container.site_admin.update_organization(principal, name, attrs)))


@router.delete("/organizations/{name}")
def delete_organization(name: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.organization_deletion.delete_as_site_admin(principal, name)  # what an owner's delete does
    return Response(status_code=204)


@router.get("/organizations/{name}/relationships/module-consumers")
def list_module_consumers(
    name: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    page, meta, links = paginate(request, container.site_admin.module_consumers(principal, name))
    return respond([aser.organization(o) for o in page], meta=meta, links=links)


@router.patch("/organizations/{name}/relationships/module-consumers")
def update_module_consumers(name: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Response:
    items = body.get("data") if isinstance(body, dict) else None
    if not isinstance(items, list) or not all(isinstance(i, dict) and isinstance(i.get("id"), str) for i in items):
        raise Invalid("data must be a list of {type: organizations, id: <name>}", pointer="/data")
    container.site_admin.set_module_consumers(principal, name, [i["id"] for i in items])
    return Response(status_code=204)


# users -----------------------------------------------------------------------------------
@router.get("/users")
def list_users(request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    query = request.query_params
    users = container.admin_users.list(
        principal, query.get("q") or "", admin=query.get("filter[admin]"), suspended=query.get("filter[suspended]")
    )
    page, meta, links = paginate(request, users)
    if "organizations" not in includes(request, frozenset({"organizations"})):
        return respond([aser.user(u) for u in page], meta=meta, links=links)
    of_user, orgs = container.admin_users.organizations_of(principal, page)
    included = [aser.organization(o) for o in orgs]
    return respond([aser.user(u, of_user[u.id]) for u in page], meta=meta, links=links, included=included)


@router.delete("/users/{user_id}")
def delete_user(user_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.admin_users.delete(principal, user_id)
    return Response(status_code=204)


@router.post("/users/{user_id}/actions/{action}")
def user_action(user_id: str, action: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond(aser.user(container.admin_users.act(principal, user_id, action)))
