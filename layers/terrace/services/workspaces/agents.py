"""Agents: the `terrace agent` processes of an agent pool, as they register, ping and exit.

An agent authenticates with one of its pool's tokens (`PrincipalKind.AGENT`, subject: the pool). It registers once
(`POST /api/agent/register`: an `agent-…` id, its name and the address it connected from) and then uses that id as
its runner id in the runner protocol; every ask for a job and every job heartbeat is its ping (`seen`), written at
most every `PING_EVERY_S` unless its status changes. Its status as read is `Agent.status_at` (idle/busy while it
pings, unknown then errored when it falls silent); it says `exited` when it stops.
"""

from __future__ import annotations

from typing import Any

from terrace.domain import agent_pools as model
from terrace.domain import clock
from terrace.domain.agent_pools import Agent
from terrace.domain.errors import Forbidden, NotFound
from terrace.domain.ids import new_id
from terrace.domain.principal import Principal, PrincipalKind
from terrace.services.workspaces.store_agent_pools import AgentPoolStore

PING_EVERY_S = 10  # a busy agent heartbeats every few seconds: its ping is written at most this often


class AgentService:
    def __init__(self, store: AgentPoolStore) -> None:
        self._store = store

    @staticmethod
    def _pool_of(principal: Principal) -> str:
        if principal.kind is not PrincipalKind.AGENT or not principal.organization:
            raise Forbidden("only an agent token registers agents")
        return principal.subject_id

    def register(self, principal: Principal, name: Any, ip_address: str) -> Agent:
        """A new agent of the token's pool (its pool must still exist)."""
        pool_id = self._pool_of(principal)
        stored = self._store.find(pool_id)
        if stored is None or stored.pool.organization != principal.organization:
            raise NotFound(f"agent pool {pool_id} not found")
        agent_id = new_id("agent")
        agent = Agent(
            id=agent_id,
            pool_id=pool_id,
            organization=principal.organization,
            name=model.check_agent_name(name) or agent_id,
            ip_address=ip_address[: model.IP_MAX],
            status=model.IDLE,
            last_ping_at=clock.now_iso(),
            last_ping_epoch=clock.epoch(),
            token_id=principal.token_id or "",
        )
        self._store.register(agent)
        return agent

    def _own(self, principal: Principal, agent_id: str) -> dict[str, Any]:
        pool_id = self._pool_of(principal)
        item = self._store.agent_item(agent_id)
        if item is None or item["pool_id"] != pool_id:
            raise NotFound(f"agent {agent_id} not found; register first")
        return item

    def seen(self, principal: Principal, agent_id: str, status: str) -> None:
        """The agent's ping: its status and last ping, written when it changed or every `PING_EVERY_S`."""
        item = self._own(principal, agent_id)
        epoch = clock.epoch()
        if item.get("status") == status and epoch - float(item.get("last_ping_epoch", 0)) < PING_EVERY_S:
            return
        self._store.ping(item, status, clock.now_iso(), epoch)

    def exit(self, principal: Principal, agent_id: str) -> Agent:
        """The agent stops (SIGTERM, `TFC_AGENT_SINGLE` done): it shows `exited`."""
        item = self._own(principal, agent_id)
        return self._store.ping(item, model.EXITED, clock.now_iso(), clock.epoch())
