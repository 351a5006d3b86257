"""The rules that bind a workspace, or an organization's default, to an agent pool: a workspace in the agent mode
names a pool of its organization that allows it; an organization whose default mode is the agent mode names one of
its pools as the default. The workspace and organization services ask them before they save (422 otherwise)."""

from __future__ import annotations

from terrace.domain.errors import Invalid
from terrace.domain.organizations import Organization
from terrace.domain.projects import default_project_id
from terrace.domain.workspace import Workspace
from terrace.services.access.organizations import OrganizationService
from terrace.services.workspaces.agent_pools import AgentPoolService


class AgentPoolBindings:
    def __init__(self, pools: AgentPoolService, organizations: OrganizationService) -> None:
        self._pools, self._orgs = pools, organizations

    def check_workspace(self, ws: Workspace) -> None:
        """A workspace in the agent mode names a pool of its organization that allows it (422 otherwise); one in
        another mode names none."""
        org = self._orgs.by_key(ws.organization)
        if not ws.overwrites_execution_mode or ws.execution_mode != "agent":
            if ws.overwrites_execution_mode and ws.agent_pool_id:
                raise Invalid(
                    "Agent pool must not be specified unless using 'agent' execution mode",
                    pointer="/data/attributes/agent-pool-id",
                )
            return
        if not ws.agent_pool_id:
            raise Invalid("Agent pool must be specified when using 'agent' execution mode",
                          pointer="/data/attributes/agent-pool-id")  # fmt: skip
        pool = self._pools.load(ws.agent_pool_id, org.key)
        if pool is None:
            raise Invalid(f"agent pool {ws.agent_pool_id} not found", pointer="/data/attributes/agent-pool-id")
        if not pool.allows(ws.id, ws.project_id or default_project_id(org.key)):
            raise Invalid(
                f"agent pool {pool.name} does not allow workspace {ws.name}", pointer="/data/attributes/agent-pool-id"
            )

    def check_default(self, org: Organization, mode: str, pool_id: str | None) -> str | None:
        """The organization's default pool after an update: required with the agent mode, refused without."""
        if mode != "agent":
            if pool_id:
                raise Invalid(
                    "Default agent pool must not be specified unless using 'agent' execution mode",
                    pointer="/data/relationships/default-agent-pool",
                )
            return None
        if not pool_id or self._pools.load(pool_id, org.key) is None:
            raise Invalid(
                "Default agent pool must be an agent pool of the organization when using 'agent' execution mode",
                pointer="/data/relationships/default-agent-pool",
            )
        return pool_id
