"""Agent pools of an organization (TFC's `/organizations/:org/agent-pools`, `/agent-pools/:id`), their tokens
(`/agent-pools/:id/authentication-tokens`) and agents (`/agent-pools/:id/agents`, `/agents/:id`), and the rules that
bind a workspace or an organization's default to a pool (`agent_pool_bindings.py`).

Every member reads pools and agents; owners and teams with `manage-agent-pools` change them and issue or revoke
their tokens (`authz.py`). A token is an API token of kind `agent` whose subject is the pool: hashed like every
token, its secret shown once, its last use recorded by `AccountService.authenticate`.
"""

from __future__ import annotations

import builtins
import dataclasses
from collections.abc import Callable
from typing import Any

from terrace.domain import agent_pools as model
from terrace.domain import clock
from terrace.domain.agent_pools import Agent, AgentPool
from terrace.domain.errors import Conflict, Forbidden, Invalid, NotFound
from terrace.domain.ids import new_id
from terrace.domain.principal import Principal, PrincipalKind
from terrace.domain.projects import default_project_id
from terrace.domain.tokens import IssuedToken, Token, creator_of
from terrace.domain.workspace import Workspace
from terrace.services.access.accounts import AccountService
from terrace.services.access.authz import Action
from terrace.services.access.organizations import OrganizationService
from terrace.services.access.projects import ProjectService
from terrace.services.workspaces.store_agent_pools import AgentPoolStore
from terrace.services.workspaces.workspaces import WorkspaceService

DEFAULT_POOL = model.DEFAULT_POOL_SETTING


class AgentPoolService:
    def __init__(
        self,
        store: AgentPoolStore,
        accounts: AccountService,
        organizations: OrganizationService,
        projects: ProjectService,
        workspaces: WorkspaceService,
        *,
        after_tokens_revoked: Callable[[str, set[str]], object],
    ) -> None:
        self._store, self._accounts, self._orgs = store, accounts, organizations
        self._projects, self._workspaces = projects, workspaces
        # the runs area's part: the run tokens of the jobs an agent token claimed die with it
        # (`JobRetries.lose_claimed_with`); (pool id, revoked token ids)
        self.after_tokens_revoked = after_tokens_revoked

    # reads -------------------------------------------------------------------------------
    def load(self, pool_id: str | None, organization: str) -> AgentPool | None:
        """The pool when it exists in `organization` (no permission check: for the binding rules)."""
        stored = self._store.find(pool_id)
        if stored is None or stored.pool.organization != organization:
            return None
        return stored.pool if stored.organization_id == self._orgs.by_key(organization).id else None

    def get(self, principal: Principal, pool_id: str, action: Action = Action.READ_AGENT_POOLS) -> AgentPool:
        stored = self._store.find(pool_id)
        try:
            org = self._orgs.get_by_key(principal, stored.pool.organization) if stored else None
        except NotFound:
            org = None
        if stored is None or org is None or stored.organization_id != org.id:
            raise NotFound(f"agent pool {pool_id} not found")
        if action is not Action.READ_AGENT_POOLS:
            self._orgs.get_by_key(principal, org.key, action)
        return stored.pool

    def list(
        self,
        principal: Principal,
        organization: str,
        query: str | None = None,
        allowed_workspace: str | None = None,
        allowed_project: str | None = None,
        sort: str = "",
    ) -> builtins.list[AgentPool]:
        """Oldest first (`sort=-created-at`: newest first; `name`, `-name`); `q` a part of the name;
        `filter[allowed_workspaces][name]` (`[allowed_projects][name]`):
        the pools a workspace (project) of that name may use."""
        org = self._orgs.get(principal, organization, Action.READ_AGENT_POOLS)
        pools = [s.pool for s in self._store.of_organization(org.key) if s.organization_id == org.id]
        if query:
            pools = [p for p in pools if query.lower() in p.name.lower()]
        if allowed_workspace:
            ws_id = self._workspaces.find_id(org.key, allowed_workspace)
            ws = self._workspaces.load(ws_id) if ws_id else None
            pools = [
                p for p in pools if ws is not None and p.allows(ws.id, ws.project_id or default_project_id(org.key))
            ]
        if allowed_project:
            ids = {p.id for p in self._projects.list(principal, organization, names=[allowed_project])}
            pools = [p for p in pools if p.organization_scoped or ids & set(p.allowed_projects)]
        if sort.removeprefix("-") == "name":
            pools = sorted(pools, key=lambda p: p.name.lower())
        return pools[::-1] if sort.startswith("-") else pools

    def workspaces_of(self, pool: AgentPool) -> builtins.list[Workspace]:
        """The workspaces whose runs this pool executes (their own choice or the organization's default)."""
        org = self._orgs.by_key(pool.organization)
        projects = self._projects.all_in(pool.organization)
        return [
            ws
            for ws in self._workspaces.all_in(pool.organization)
            if model.pool_of(ws, org, projects.get(self._workspaces.project_of(ws))) == pool.id
        ]

    # writes ------------------------------------------------------------------------------
    def create(
        self, principal: Principal, organization: str, attrs: dict[str, Any], relations: dict[str, builtins.list[str]]
    ) -> AgentPool:
        org = self._orgs.get(principal, organization, Action.MANAGE_AGENT_POOLS)
        scoped = model.check_bool(attrs.get("organization-scoped", True), "organization-scoped")
        pool = AgentPool(
            id=new_id("apool"),
            organization=org.key,
            name=model.check_name(attrs.get("name")),
            created_at=clock.now_iso(),
            organization_scoped=scoped,
        )
        pool = self._related(pool, relations)
        self._refuse_taken(pool)
        self._store.create(pool, org.id)
        return pool

    def update(
        self, principal: Principal, pool_id: str, attrs: dict[str, Any], relations: dict[str, builtins.list[str]]
    ) -> AgentPool:
        """Only what is sent changes; a relationship sent with `data: []` is emptied."""
        pool = self.get(principal, pool_id, Action.MANAGE_AGENT_POOLS)
        changed = pool
        if "name" in attrs:
            changed = dataclasses.replace(changed, name=model.check_name(attrs["name"]))
        if "organization-scoped" in attrs:
            scoped = model.check_bool(attrs["organization-scoped"], "organization-scoped")
            changed = dataclasses.replace(changed, organization_scoped=scoped)
        changed = self._related(changed, relations)
        if changed.name != pool.name:
            self._refuse_taken(changed)
        changed = dataclasses.replace(changed, version=pool.version + 1)
        org = self._orgs.by_key(pool.organization)
        if not self._store.replace(changed, org.id, pool.version):
            raise Conflict(f"agent pool {pool_id} changed concurrently; retry")
        return changed

    def delete(self, principal: Principal, pool_id: str) -> None:
        """A pool some workspace (or the organization's default) still uses cannot be deleted (as in TFC)."""
        pool = self.get(principal, pool_id, Action.MANAGE_AGENT_POOLS)
        org = self._orgs.by_key(pool.organization)
        if org.settings.get(DEFAULT_POOL) == pool.id or self.workspaces_of(pool):
            raise Conflict(
                f"agent pool {pool.name} is in use by workspaces or as the organization's default; "
                "change their execution mode first"
            )
        revoked = set()
        for token in self._accounts.list_tokens(pool.id):
            self._accounts.revoke_token(token.id)
            revoked.add(token.id)
        self.after_tokens_revoked(pool.id, revoked)
        self._store.delete(pool.id)

    def _related(self, pool: AgentPool, relations: dict[str, builtins.list[str]]) -> AgentPool:
        if "allowed-workspaces" in relations:
            allowed = self._workspace_ids(pool, relations["allowed-workspaces"])
            pool = dataclasses.replace(pool, allowed_workspaces=allowed)
        if "excluded-workspaces" in relations:
            excluded = self._workspace_ids(pool, relations["excluded-workspaces"])
            pool = dataclasses.replace(pool, excluded_workspaces=excluded)
        if "allowed-projects" in relations:
            ids = relations["allowed-projects"][: model.ALLOWED_MAX]
            for project_id in ids:
                self._projects.in_organization(pool.organization, project_id)
            pool = dataclasses.replace(pool, allowed_projects=tuple(dict.fromkeys(ids)))
        return pool

    def _workspace_ids(self, pool: AgentPool, ids: builtins.list[str]) -> tuple[str, ...]:
        """Workspaces of the pool's organization, each once (NotFound for any other)."""
        for ws_id in ids[: model.ALLOWED_MAX]:
            try:
                ws = self._workspaces.load(ws_id)
            except NotFound:
                ws = None
            if ws is None or ws.organization != pool.organization:
                raise NotFound(f"workspace {ws_id} not found")
        return tuple(dict.fromkeys(ids[: model.ALLOWED_MAX]))

    def _refuse_taken(self, pool: AgentPool) -> None:
        for stored in self._store.of_organization(pool.organization):
            if stored.pool.name == pool.name and stored.pool.id != pool.id:
                raise Invalid("name has already been taken", pointer="/data/attributes/name")

    # tokens ------------------------------------------------------------------------------
    def tokens(self, principal: Principal, pool_id: str) -> builtins.list[Token]:
        pool = self.get(principal, pool_id, Action.MANAGE_AGENT_POOLS)
        return [self._shown(t) for t in self._accounts.list_tokens(pool.id)]

    def issue_token(self, principal: Principal, pool_id: str, description: Any) -> IssuedToken:
        pool = self.get(principal, pool_id, Action.MANAGE_AGENT_POOLS)
        if not isinstance(description, str) or not description.strip() or len(description) > 2000:
            raise Invalid("description is required (at most 2000 characters)", pointer="/data/attributes/description")
        issued = self._accounts.issue_token(
            PrincipalKind.AGENT,
            pool.id,
            description=description,
            organization=pool.organization,
            created_by=creator_of(principal),
        )
        return dataclasses.replace(issued, token=self._shown(issued.token))

    def token(self, principal: Principal, token: Token) -> Token:
        """An agent token, to those who manage its pool (to others it does not exist)."""
        try:
            self.get(principal, token.subject_id, Action.MANAGE_AGENT_POOLS)
        except NotFound as exc:
            raise NotFound(f"authentication token {token.id} not found") from exc
        return self._shown(token)

    def _shown(self, token: Token) -> Token:
        """Its creator as responses show it (`created-by`): an organization by its current name."""
        if token.created_by and token.created_by[0] == "organizations":
            return dataclasses.replace(token, created_by=("organizations", self._orgs.name_of(token.created_by[1])))
        return token

    def may_manage(self, principal: Principal, organization: str) -> bool:
        """Whether the caller may change the organization's pools and their tokens (the UI shows the forms)."""
        org = self._orgs.get(principal, organization, Action.READ_AGENT_POOLS)
        try:
            self._orgs.get_by_key(principal, org.key, Action.MANAGE_AGENT_POOLS)
        except (Forbidden, NotFound):
            return False
        return True

    def revoke_token_by_id(self, principal: Principal, token_id: str) -> None:
        token = self._accounts.get_token(token_id)
        if token.kind is not PrincipalKind.AGENT:
            raise NotFound(f"authentication token {token_id} not found")
        self.revoke_token(principal, token)

    def revoke_token(self, principal: Principal, token: Token) -> None:
        """The token stops working, and so do the run tokens of the jobs it claimed (its agents hold them)."""
        self._accounts.revoke_token(self.token(principal, token).id)
        self.after_tokens_revoked(token.subject_id, {token.id})

    # agents ------------------------------------------------------------------------------
    def agents(self, principal: Principal, pool_id: str, last_ping_since: str | None = None) -> builtins.list[Agent]:
        found = self.agents_of(self.get(principal, pool_id))
        return [a for a in found if not last_ping_since or a.last_ping_at >= last_ping_since]

    def agents_of(self, pool: AgentPool) -> builtins.list[Agent]:
        """The agents of a pool a checked call of the same request returned (its `agent-count`)."""
        return self._store.agents_of(pool.id)

    def agent(self, principal: Principal, agent_id: str) -> Agent:
        agent = self._store.find_agent(agent_id)
        try:
            if agent is not None:
                self.get(principal, agent.pool_id)
        except NotFound:
            agent = None
        if agent is None:
            raise NotFound(f"agent {agent_id} not found")
        return agent
