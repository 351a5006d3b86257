"""/api/v2 agent pools, their authentication tokens and agents (TFC's shapes; `services/workspaces/agent_pools.py`),
and `/api/agent`: what a `terrace agent` process says about itself (register, exit) with its pool's token."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from terrace.domain.agent_pools import BUSY, IDLE, Agent, AgentPool
from terrace.domain.clock import epoch
from terrace.domain.errors import Invalid
from terrace.domain.tokens import Token
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.hyok_serializers import hyok_document
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
agent_router = APIRouter(prefix="/api/agent")
RELATIONS = {"allowed-workspaces": "workspaces", "allowed-projects": "projects", "excluded-workspaces": "workspaces"}


def serialize_pool(pool: AgentPool, workspace_ids: list[str], agents: list[Agent]) -> dict[str, Any]:
    now = epoch()
    return resource(
        "agent-pools",
        pool.id,
        {
            "name": pool.name,
            "created-at": pool.created_at,
            "organization-scoped": pool.organization_scoped,
            "agent-count": sum(1 for a in agents if a.status_at(now) in (IDLE, BUSY)),
        },
        relationships={
            "organization": ref("organizations", pool.organization),
            "workspaces": refs("workspaces", workspace_ids),
            "allowed-workspaces": refs("workspaces", pool.allowed_workspaces),
            "allowed-projects": refs("projects", pool.allowed_projects),
            "excluded-workspaces": refs("workspaces", pool.excluded_workspaces),
            "agents": {"links": {"related": f"/api/v2/agent-pools/{pool.id}/agents"}},
            "authentication-tokens": {"links": {"related": f"/api/v2/agent-pools/{pool.id}/authentication-tokens"}},
        },
        links={"self": f"/api/v2/agent-pools/{pool.id}"},
    )


def serialize_agent(agent: Agent) -> dict[str, Any]:
    return resource(
        "agents",
        agent.id,
        {
            "name": agent.name,
            "ip-address": agent.ip_address,
            "status": agent.status_at(epoch()),
            "last-ping-at": agent.last_ping_at,
        },
        relationships={"agent-pool": ref("agent-pools", agent.pool_id)},
        links={"self": f"/api/v2/agents/{agent.id}"},
    )


def serialize_token(token: Token, secret: str | None = None) -> dict[str, Any]:
    return resource(
        "authentication-tokens",
        token.id,
        {
            "created-at": token.created_at,
            "last-used-at": token.last_used_at,
            "description": token.description,
            "token": secret,
        },
        relationships={
            "agent-pool": ref("agent-pools", token.subject_id),
            # its creator: a user, team or organization (null for a token from before creators were recorded)
            "created-by": {
                "data": {"type": token.created_by[0], "id": token.created_by[1]} if token.created_by else None
            },
        },
    )


def _relations(data: dict[str, Any]) -> dict[str, list[str]]:
    """`allowed-workspaces` / `allowed-projects` as sent (`data: []` empties one; absent: unchanged)."""
    found: dict[str, list[str]] = {}
    for name, type_ in RELATIONS.items():
        rel = data["relationships"].get(name)
        if rel is None:
            continue
        items = rel.get("data") if isinstance(rel, dict) else None
        if not isinstance(items, list) or not all(
            isinstance(i, dict) and isinstance(i.get("id"), str) and i.get("type") in (type_, None) for i in items
        ):
            raise Invalid(f"relationships.{name} must be {{data: [{{type: {type_}, id}}]}}",
                          pointer=f"/data/relationships/{name}")  # fmt: skip
        found[name] = [str(i["id"]) for i in items]
    return found


def _serialize(container: ContainerDep, pool: AgentPool) -> dict[str, Any]:
    service = container.agent_pools
    return serialize_pool(pool, [ws.id for ws in service.workspaces_of(pool)], service.agents_of(pool))


@router.get("/organizations/{org}/agent-pools")
def list_agent_pools(org: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    params = request.query_params
    pools = container.agent_pools.list(
        principal,
        org,
        query=params.get("q"),
        allowed_workspace=params.get("filter[allowed_workspaces][name]"),
        allowed_project=params.get("filter[allowed_projects][name]"),
        sort=params.get("sort") or "",
    )
    return respond_page(request, pools, lambda pool: _serialize(container, pool))


@router.post("/organizations/{org}/agent-pools")
def create_agent_pool(org: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    data = read_document(body, "agent-pools")
    pool = container.agent_pools.create(principal, org, attributes(data), _relations(data))
    return respond(_serialize(container, pool), 201)


@router.get("/agent-pools/{pool_id}")
def read_agent_pool(
    pool_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    pool = container.agent_pools.get(principal, pool_id)
    document = _serialize(container, pool)
    if "hyok-configurations" not in includes(request):
        return respond(document)
    hyoks = container.hyok_configurations.of_pool(principal, pool.organization, pool.id)  # Hold Your Own Key
    document["relationships"]["hyok-configurations"] = refs("hyok-configurations", [h.id for h in hyoks])
    included = [hyok_document(h, *container.hyok_configurations.details(h)) for h in hyoks]
    return respond(document, included=included)


@router.patch("/agent-pools/{pool_id}")
def update_agent_pool(
    pool_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    data = read_document(body, "agent-pools")
    pool = container.agent_pools.update(principal, pool_id, attributes(data), _relations(data))
    return respond(_serialize(container, pool))


@router.delete("/agent-pools/{pool_id}")
def delete_agent_pool(pool_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.agent_pools.delete(principal, pool_id)
    return Response(status_code=204)


@router.get("/agent-pools/{pool_id}/authentication-tokens")
def list_agent_tokens(
    pool_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    return respond_page(request, container.agent_pools.tokens(principal, pool_id), serialize_token)


@router.post("/agent-pools/{pool_id}/authentication-tokens")
def create_agent_token(
    pool_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    data = read_document(body, ("authentication-tokens", "agent-tokens"))
    issued = container.agent_pools.issue_token(principal, pool_id, attributes(data).get("description"))
    return respond(serialize_token(issued.token, issued.secret), 201)


@router.get("/agent-pools/{pool_id}/agents")
def list_agents(pool_id: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    since = request.query_params.get("filter[last-ping-since]")
    return respond_page(request, container.agent_pools.agents(principal, pool_id, since), serialize_agent)


@router.get("/agents/{agent_id}")
def read_agent(agent_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond(serialize_agent(container.agent_pools.agent(principal, agent_id)))


# what an agent says about itself (its pool's token) ------------------------------------------------------------
@agent_router.post("/register")
def register_agent(request: Request, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Any:
    """`{name}` -> `{agent_id, pool_id, organization}`: the agent then asks for jobs as runner `agent_id`."""
    name = body.get("name") if isinstance(body, dict) else None
    address = request.client.host if request.client else ""
    agent = container.agents.register(principal, name, address)
    return {"agent_id": agent.id, "pool_id": agent.pool_id, "organization": agent.organization, "name": agent.name}


@agent_router.post("/agents/{agent_id}/exit")
def agent_exit(agent_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.agents.exit(principal, agent_id)
    return Response(status_code=204)
