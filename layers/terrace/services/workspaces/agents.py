"""Agents: the `terrace agent` processes of an agent pool, as they register, ping and exit.

An agent authenticates with one of its pool's tokens (`PrincipalKind.AGENT`, subject: the pool). It registers once
(`POST /api/agent/register`: an `agent-…` id, its name and the address it connected from) and then uses that id as
its runner id in the runner protocol; every ask for a job and every job heartbeat is its ping (`seen`), written at
most every `PING_EVERY_S` unless its status changes. Its status as read is `Agent.status_at` (idle/busy while it
pings, unknown then errored when it falls silent); it says `exited` when it stops.
"""

from __future__ import annotations

from typing import Any

from terrace.adapters.table import ConditionFailed, Table
from terrace.domain import agent_pools as model
from terrace.domain import clock
from terrace.domain.agent_pools import Agent
from terrace.domain.errors import Forbidden, NotFound
from terrace.domain.ids import looks_like, new_id
from terrace.domain.principal import Principal, PrincipalKind

SORT_KEY = "agent"
POOL_SORT_KEY = "agent-pool"
PING_EVERY_S = 10  # a busy agent heartbeats every few seconds: its ping is written at most this often
KEEP_S = 7 * 24 * 3600  # an agent item outlives its last ping by this much (the table's TTL removes it)


def agents_index(pool_id: str) -> str:
    return f"{pool_id}#agents"


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


class AgentService:
    def __init__(self, table: Table) -> None:
        self._table = table

    @staticmethod
    def _pool_of(principal: Principal) -> str:
        if principal.kind is not PrincipalKind.AGENT or not principal.organization:
            raise Forbidden("only an agent token registers agents")
        return principal.subject_id

    def register(self, principal: Principal, name: Any, ip_address: str) -> Agent:
        """A new agent of the token's pool (its pool must still exist)."""
        pool_id = self._pool_of(principal)
        pool = self._table.get(pool_id, POOL_SORT_KEY)
        if pool is None or pool.get("organization") != principal.organization:
            raise NotFound(f"agent pool {pool_id} not found")
        agent_id, now, epoch = new_id("agent"), clock.now_iso(), clock.epoch()
        item = {
            "pk": agent_id,
            "sk": SORT_KEY,
            "pool_id": pool_id,
            "organization": principal.organization,
            "name": model.check_agent_name(name) or agent_id,
            "ip_address": ip_address[: model.IP_MAX],
            "status": model.IDLE,
            "last_ping_at": now,
            "last_ping_epoch": epoch,
            "token_id": principal.token_id or "",
            "version": 1,
            "expires_at": int(epoch) + KEEP_S,
            "gsi1pk": agents_index(pool_id),
            "gsi1sk": f"{now}#{agent_id}",
        }
        self._table.put(item, if_absent=True)
        return agent_from_item(item)

    def _own(self, principal: Principal, agent_id: str) -> dict[str, Any]:
        pool_id = self._pool_of(principal)
        item = self._table.get(agent_id, SORT_KEY) if looks_like(agent_id, "agent") else None
        if item is None or item["pool_id"] != pool_id:
            raise NotFound(f"agent {agent_id} not found; register first")
        return item

    def seen(self, principal: Principal, agent_id: str, status: str) -> None:
        """The agent's ping: its status and last ping, written when it changed or every `PING_EVERY_S`."""
        item = self._own(principal, agent_id)
        epoch = clock.epoch()
        if item.get("status") == status and epoch - float(item.get("last_ping_epoch", 0)) < PING_EVERY_S:
            return
        self._write(item, status, epoch)

    def exit(self, principal: Principal, agent_id: str) -> Agent:
        """The agent stops (SIGTERM, `TFC_AGENT_SINGLE` done): it shows `exited`."""
        item = self._own(principal, agent_id)
        return self._write(item, model.EXITED, clock.epoch())

    def _write(self, item: dict[str, Any], status: str, epoch: float) -> Agent:
        version = int(item.get("version", 1))
        updated = {
            **item,
            "status": status,
            "last_ping_at": clock.now_iso(),
            "last_ping_epoch": epoch,
            "expires_at": int(epoch) + KEEP_S,
            "version": version + 1,
        }
        try:
            self._table.put(updated, if_version=version)
        except ConditionFailed:
            return agent_from_item(item)  # a concurrent ping of the same agent won: it says the same
        return agent_from_item(updated)
