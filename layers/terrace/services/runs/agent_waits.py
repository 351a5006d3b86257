"""Why an agent pool's run waits: "waiting for an agent of pool X" while a phase of it is queued and no agent took it
(the run page's "why is this run waiting" reads it; Terrace's runners never take such a run)."""

from __future__ import annotations

from terrace.domain import agent_pools as model
from terrace.domain import clock
from terrace.domain import runs as rs
from terrace.domain.runs import Run
from terrace.services.workspaces.agent_pools import AgentPoolService


class AgentWaits:
    def __init__(self, pools: AgentPoolService) -> None:
        self._pools = pools

    def waiting_for(self, run: Run) -> str | None:
        """What a queued run of an agent pool waits for (None: it is not one, or an agent has it). Reads only."""
        executor = self.executor(run)
        return None if executor is None or run.status not in rs.QUEUED else f"waiting for {executor}"

    def executor(self, run: Run) -> str | None:
        """Who takes `run`'s jobs when that is an agent pool, with whether any of its agents is connected (None: the
        run is not an agent pool's). Reads only."""
        if not run.agent_pool_id:
            return None
        pool = self._pools.load(run.agent_pool_id, run.organization)
        if pool is None:
            return f"an agent of pool {run.agent_pool_id}, which no longer exists"
        now = clock.epoch()
        live = [a for a in self._pools.agents_of(pool) if a.status_at(now) in (model.IDLE, model.BUSY)]
        if not live:
            return f"an agent of pool {pool.name} (no agent of it is connected)"
        return f"an agent of pool {pool.name} ({len(live)} connected, all busy)"
