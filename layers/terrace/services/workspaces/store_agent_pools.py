"""Storage of agent pools (`apool-…` / `agent-pool`, listed under gsi1 `org#<org key>#agent-pools` by `created#id`)
and their agents (`agent-…` / `agent`, listed under gsi1 `<pool>#agents` by `registered#id`; the table's TTL removes
an agent `KEEP_S` after its last ping). A pool's queued jobs are the job queue's items under its pool's partition
(`domain/agent_pools.py: queue_key`, `adapters/table_job_queue.py`): they go with the pool's organization."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from terrace.adapters.table import ConditionFailed, Table
from terrace.domain import agent_pools as model
from terrace.domain.agent_pools import Agent, AgentPool
from terrace.domain.ids import looks_like

POOL_SORT_KEY = "agent-pool"
AGENT_SORT_KEY = "agent"
KEEP_S = 7 * 24 * 3600  # an agent item outlives its last ping by this much (the table's TTL removes it)


def _pools(org_key: str) -> str:
    return f"org#{org_key}#agent-pools"


def _agents(pool_id: str) -> str:
    return f"{pool_id}#agents"


@dataclass(frozen=True)
class StoredPool:
    pool: AgentPool
    organization_id: str | None  # the organization it was created in: a later one of the same name never gets it


def _pool(item: dict[str, Any]) -> StoredPool:
    pool = AgentPool(
        id=item["pk"],
        organization=item["organization"],
        name=item["name"],
        created_at=item["created_at"],
        organization_scoped=bool(item.get("organization_scoped", True)),
        allowed_workspaces=tuple(item.get("allowed_workspaces", [])),
        allowed_projects=tuple(item.get("allowed_projects", [])),
        excluded_workspaces=tuple(item.get("excluded_workspaces", [])),
        version=int(item["version"]),
    )
    return StoredPool(pool, item.get("organization_id"))


def _pool_item(pool: AgentPool, organization_id: str) -> dict[str, Any]:
    return {
        "pk": pool.id,
        "sk": POOL_SORT_KEY,
        "organization": pool.organization,
        "organization_id": organization_id,
        "name": pool.name,
        "created_at": pool.created_at,
        "organization_scoped": pool.organization_scoped,
        "allowed_workspaces": list(pool.allowed_workspaces),
        "allowed_projects": list(pool.allowed_projects),
        "excluded_workspaces": list(pool.excluded_workspaces),
        "version": pool.version,
        "gsi1pk": _pools(pool.organization),
        "gsi1sk": f"{pool.created_at}#{pool.id}",
    }


def agent_from_item(item: dict[str, Any]) -> Agent:
    return Agent(
        id=item["pk"],
        pool_id=item["pool_id"],
        organization=item["organization"],
        name=item.get("name", ""),
        ip_address=item.get("ip_address", ""),
        status=item.get("status", model.IDLE),
        last_ping_at=item.get("last_ping_at", ""),
        last_ping_epoch=float(item.get("last_ping_epoch", 0)),
        token_id=item.get("token_id", ""),
        version=int(item.get("version", 1)),
    )


class AgentPoolStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    # pools -------------------------------------------------------------------------------
    def find(self, pool_id: str | None) -> StoredPool | None:
        item = self._table.get(pool_id, POOL_SORT_KEY) if pool_id and looks_like(pool_id, "apool") else None
        return _pool(item) if item else None

    def of_organization(self, org_key: str) -> list[StoredPool]:
        """Oldest first."""
        return [_pool(item) for item in self._table.query(_pools(org_key), index="gsi1")]

    def create(self, pool: AgentPool, organization_id: str) -> None:
        self._table.put(_pool_item(pool, organization_id), if_absent=True)

    def replace(self, pool: AgentPool, organization_id: str, expected_version: int) -> bool:
        """False when the pool changed since `expected_version`."""
        try:
            self._table.put(_pool_item(pool, organization_id), if_version=expected_version)
        except ConditionFailed:
            return False
        return True

    def delete(self, pool_id: str) -> None:
        self._table.delete(pool_id, POOL_SORT_KEY)

    def delete_all_of(self, *, organization: str) -> None:
        """An organization's pools, each with its agents and its queued jobs (its tokens: the access area's)."""
        for item in self._table.query(_pools(organization), index="gsi1"):
            self._delete_all(self._table.query(_agents(item["pk"]), index="gsi1"))
            self._delete_all(self._table.query(f"org#{model.queue_key(organization, item['pk'])}#jobs"))
            self._table.delete(item["pk"], item["sk"])

    # agents ------------------------------------------------------------------------------
    def agents_of(self, pool_id: str) -> list[Agent]:
        return [agent_from_item(i) for i in self._table.query(_agents(pool_id), index="gsi1")]

    def agent_item(self, agent_id: str) -> dict[str, Any] | None:
        """The agent's record as stored (what `ping` changes)."""
        return self._table.get(agent_id, AGENT_SORT_KEY) if looks_like(agent_id, "agent") else None

    def find_agent(self, agent_id: str) -> Agent | None:
        item = self.agent_item(agent_id)
        return agent_from_item(item) if item else None

    def register(self, agent: Agent) -> None:
        item = {
            "pk": agent.id,
            "sk": AGENT_SORT_KEY,
            "pool_id": agent.pool_id,
            "organization": agent.organization,
            "name": agent.name,
            "ip_address": agent.ip_address,
            "status": agent.status,
            "last_ping_at": agent.last_ping_at,
            "last_ping_epoch": agent.last_ping_epoch,
            "token_id": agent.token_id,
            "version": agent.version,
            "expires_at": int(agent.last_ping_epoch) + KEEP_S,
            "gsi1pk": _agents(agent.pool_id),
            "gsi1sk": f"{agent.last_ping_at}#{agent.id}",
        }
        self._table.put(item, if_absent=True)

    def ping(self, item: dict[str, Any], status: str, at: str, epoch: float) -> Agent:
        """The agent's status and last ping (`item`: its record as read); a concurrent ping of the same agent that
        won says the same, so a lost write returns the agent as read."""
        version = int(item.get("version", 1))
        updated = {**item, "status": status, "last_ping_at": at, "last_ping_epoch": epoch,
                   "expires_at": int(epoch) + KEEP_S, "version": version + 1}  # fmt: skip
        try:
            self._table.put(updated, if_version=version)
        except ConditionFailed:
            return agent_from_item(item)
        return agent_from_item(updated)

    def _delete_all(self, items: list[dict[str, Any]]) -> None:
        if items:
            self._table.batch_delete([(item["pk"], item["sk"]) for item in items])
