"""Workspaces (services/workspaces/): workspaces and their tags, remote state consumers, variables, variable sets
(their variables, and what reaches a run: `effective_variables`), SSH keys,
locks and data retention policies (their sweep, and purge and deletion, are use cases: `workflow_services.py`).

Mixed into `bootstrap.Container`: each service is built on first use from the container's adapters and its
other services (what this area takes from the others is declared below as plain attributes)."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from terrace.adapters.encryptor import Encryptor
from terrace.adapters.table import Table

if TYPE_CHECKING:
    from terrace.services.access.accounts import AccountService
    from terrace.services.access.authz import Authorizer
    from terrace.services.access.organizations import OrganizationService
    from terrace.services.access.projects import ProjectService
    from terrace.services.admin.settings import AdminSettings
    from terrace.services.admin.tool_versions import ToolVersionService
    from terrace.services.hyok.state_keys import HyokStateKeys
    from terrace.services.runs.job_retries import JobRetries
    from terrace.services.runs.scheduler import RunScheduler
    from terrace.services.runs.warm_window import WarmWindow
    from terrace.services.state.versions import StateVersionService
    from terrace.services.vcs.connections import RepositoryConnections
    from terrace.services.workspaces.agent_pool_bindings import AgentPoolBindings
    from terrace.services.workspaces.agent_pools import AgentPoolService
    from terrace.services.workspaces.agents import AgentService
    from terrace.services.workspaces.change_requests import ChangeRequestService
    from terrace.services.workspaces.effective_variables import EffectiveVariables
    from terrace.services.workspaces.locking import LockService
    from terrace.services.workspaces.module_test_workspaces import ModuleTestWorkspaces
    from terrace.services.workspaces.remote_state import RemoteStateConsumers
    from terrace.services.workspaces.reserved_tag_keys import ReservedTagKeyService
    from terrace.services.workspaces.retention import RetentionPolicyService
    from terrace.services.workspaces.run_triggers import RunTriggerService
    from terrace.services.workspaces.ssh_keys import SSHKeyService
    from terrace.services.workspaces.store import WorkspaceAreaStore
    from terrace.services.workspaces.tags import TagService
    from terrace.services.workspaces.variables import VariableService
    from terrace.services.workspaces.varset_variables import SetVariableService
    from terrace.services.workspaces.varset_views import VarsetViews
    from terrace.services.workspaces.varsets import VariableSetService
    from terrace.services.workspaces.workspaces import WorkspaceService


class WorkspaceServices:
    table: Table
    encryptor: Encryptor
    # from the other areas
    authz: Authorizer
    organizations: OrganizationService
    projects: ProjectService
    accounts: AccountService
    tool_versions: ToolVersionService
    admin_settings: AdminSettings
    state_versions: StateVersionService
    hyok_state_keys: HyokStateKeys  # wiring/hyok_services.py
    scheduler: RunScheduler
    job_retries: JobRetries
    repository_connections: RepositoryConnections
    warm_window: WarmWindow  # wiring/runner_services.py

    @cached_property
    def workspace_store(self) -> WorkspaceAreaStore:
        """The area's stores (`services/workspaces/store*.py`): the only modules of the area on the table."""
        from terrace.services.workspaces.store import WorkspaceAreaStore

        return WorkspaceAreaStore(self.table)

    @cached_property
    def module_test_workspaces(self) -> ModuleTestWorkspaces:
        from terrace.services.workspaces.module_test_workspaces import ModuleTestWorkspaces

        return ModuleTestWorkspaces(self.workspace_store.workspaces)

    @cached_property
    def workspaces(self) -> WorkspaceService:
        from terrace.services.workspaces.workspaces import WorkspaceService

        return WorkspaceService(
            self.workspace_store.workspaces,
            self.authz,
            self.organizations,
            self.projects,
            settle_terraform_version=lambda requested, tool: self.tool_versions.settle(requested, tool),
            tool_for=lambda requested: self.tool_versions.tool_for(requested),
            check_agent_pool=lambda ws: self.agent_pool_bindings.check_workspace(ws),
            secure_hyok=lambda ws: self.hyok_state_keys.secure_workspace(ws),  # wiring/hyok_services.py
            remote_state_default=lambda: self.admin_settings.default_remote_state_access(),
            repository_link=self.repository_connections,  # wiring/vcs_services.py
            locked_tag_keys=lambda org_key: self.reserved_tag_keys.locked_keys(org_key),
            opened=lambda principal, ws: self.warm_window.signal(principal, ws),  # wiring/runner_services.py
        )

    @cached_property
    def reserved_tag_keys(self) -> ReservedTagKeyService:
        from terrace.services.workspaces.reserved_tag_keys import ReservedTagKeyService

        return ReservedTagKeyService(self.workspace_store.reserved_tag_keys, self.organizations)

    @cached_property
    def agent_pools(self) -> AgentPoolService:
        from terrace.services.workspaces.agent_pools import AgentPoolService

        return AgentPoolService(
            self.workspace_store.agent_pools,
            self.accounts,
            self.organizations,
            self.projects,
            self.workspaces,
            # a revoked agent token's jobs are lost at once: their run tokens die with it
            after_tokens_revoked=lambda pool_id, token_ids: self.job_retries.lose_claimed_with(pool_id, token_ids),
        )

    @cached_property
    def agent_pool_bindings(self) -> AgentPoolBindings:
        from terrace.services.workspaces.agent_pool_bindings import AgentPoolBindings

        return AgentPoolBindings(self.agent_pools, self.organizations)

    @cached_property
    def agents(self) -> AgentService:
        from terrace.services.workspaces.agents import AgentService

        return AgentService(self.workspace_store.agent_pools)

    @cached_property
    def tags(self) -> TagService:
        from terrace.services.workspaces.tags import TagService

        return TagService(self.workspace_store.tags, self.organizations, self.workspaces)

    @cached_property
    def remote_state_consumers(self) -> RemoteStateConsumers:
        from terrace.services.workspaces.remote_state import RemoteStateConsumers

        return RemoteStateConsumers(self.workspaces)

    @cached_property
    def variables(self) -> VariableService:
        from terrace.services.workspaces.variables import VariableService

        return VariableService(self.workspace_store.variables, self.encryptor, self.workspaces)

    @cached_property
    def varsets(self) -> VariableSetService:
        from terrace.services.workspaces.varsets import VariableSetService

        return VariableSetService(
            self.workspace_store.varsets, self.authz, self.organizations, self.workspaces, self.projects
        )

    @cached_property
    def set_variables(self) -> SetVariableService:
        from terrace.services.workspaces.varset_variables import SetVariableService

        return SetVariableService(self.workspace_store.varsets, self.encryptor, self.varsets)

    @cached_property
    def varset_views(self) -> VarsetViews:
        from terrace.services.workspaces.varset_views import VarsetViews

        return VarsetViews(self.organizations, self.workspaces, self.projects, self.varsets, self.set_variables)

    @cached_property
    def effective_variables(self) -> EffectiveVariables:
        from terrace.services.workspaces.effective_variables import EffectiveVariables

        return EffectiveVariables(self.workspaces, self.variables, self.varsets, self.set_variables)

    @cached_property
    def change_requests(self) -> ChangeRequestService:
        from terrace.services.workspaces.change_requests import ChangeRequestService

        return ChangeRequestService(self.workspace_store.change_requests, self.workspaces)

    @cached_property
    def run_triggers(self) -> RunTriggerService:
        from terrace.services.workspaces.run_triggers import RunTriggerService

        return RunTriggerService(self.workspace_store.run_triggers, self.workspaces)

    @cached_property
    def ssh_keys(self) -> SSHKeyService:
        from terrace.services.workspaces.ssh_keys import SSHKeyService

        return SSHKeyService(self.workspace_store.ssh_keys, self.encryptor, self.organizations, self.workspaces)

    @cached_property
    def locks(self) -> LockService:
        from terrace.services.workspaces.locking import LockService

        return LockService(
            self.workspaces,
            unlock_checks=[self.state_versions.ensure_not_pending],
            after_release=[lambda ws: self.scheduler.promote(ws.id)],
        )

    @cached_property
    def retention_policies(self) -> RetentionPolicyService:
        from terrace.services.workspaces.retention import RetentionPolicyService

        return RetentionPolicyService(self.authz, self.organizations, self.workspaces)
