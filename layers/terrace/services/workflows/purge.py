"""Deleting what a workspace or an organization holds: their runs (events, logs, plans, run tokens, open-run
index entries, task stages and task results), configuration versions, variables, run task attachments, state
versions (blobs, outputs, resource index), variable sets (a workspace leaves those applied to it), run triggers (both
ways), notification configurations (the workspace's, and its teams' for an organization), tags, run tasks, policies
and policy sets (with their parameters and versions) and runs' policy evaluations, registry modules (with their
versions and archives), queued jobs and runner tokens.

Deletion goes from the leaves up and ends with the item that makes a thing reachable (the workspace, the
organization), so a deletion cut short leaves the thing in place, still addressable, and is finished by
deleting it again; it never leaves an organization or workspace that looks whole but is not.
"""

from __future__ import annotations

import logging

from terrace.adapters.blobs import BlobStore
from terrace.domain.errors import NotFound
from terrace.services.access.accounts import AccountService
from terrace.services.access.store import AccessStore
from terrace.services.audit.store import AuditStore
from terrace.services.hyok.store import HyokStore
from terrace.services.notifications.store import NotificationStore
from terrace.services.policies.store import PolicyStore
from terrace.services.policies.store_evaluations import EvaluationStore
from terrace.services.registry.store import ModuleStore
from terrace.services.registry.store_providers import ProviderStore
from terrace.services.runs.store import RunStore
from terrace.services.state.store import StateStore
from terrace.services.vcs.connections import RepositoryConnections
from terrace.services.workflows.store_explorer import ExplorerStore
from terrace.services.workspaces.store import WorkspaceAreaStore
from terrace.services.workspaces.varsets import VariableSetService

log = logging.getLogger(__name__)


class Purge:
    def __init__(
        self,
        blobs: BlobStore,
        accounts: AccountService,
        access: AccessStore,
        state: StateStore,
        varsets: VariableSetService,
        workspace_store: WorkspaceAreaStore,
        notifications: NotificationStore,
        stores: tuple[PolicyStore, EvaluationStore, ModuleStore, ProviderStore],
        *,
        run_store: RunStore,
        audit_store: AuditStore,
        vcs: RepositoryConnections,
        explorer_store: ExplorerStore,
        hyok_store: HyokStore | None = None,
    ) -> None:
        self._audit = audit_store
        self._hyok = hyok_store
        self._vcs = vcs
        self._policy_store, self._evaluation_store, self._module_store, self._provider_store = stores
        self._run_store = run_store
        self._explorer_store = explorer_store
        self._varsets = varsets
        self._workspace_store = workspace_store
        self._blobs = blobs
        self._accounts = accounts
        self._access = access
        self._state = state
        self._notifications = notifications

    def workspace_contents(self, workspace_id: str, org_key: str) -> None:
        """Everything stored under a workspace, except the workspace item and its name claim; and the workspace
        leaves the variable sets applied to it."""
        self._varsets.forget_workspace(org_key, workspace_id)
        self._vcs.release(workspace_id)  # its repository's webhook
        # its runs (and what each holds), configuration versions and run task attachments
        self._run_store.delete_all_of(
            workspace=workspace_id, blobs=self._blobs, revoke=self._revoke, before_run_deleted=self._policy_evaluations
        )
        # its variables, its run triggers both ways, its place in the auto-destroy sweep's index
        self._workspace_store.delete_all_of(workspace=workspace_id)
        self._state.delete_all_of(workspace=workspace_id)
        self._notifications.delete_all_of(workspace=workspace_id)
        self._explorer_store.delete_all_of(organization=org_key, workspace=workspace_id)

    def organization_contents(self, org_key: str) -> None:
        """What an organization holds beside its workspaces: variable sets, queued jobs, SSH keys, agent pools (their
        tokens, agents and queued jobs), run tasks, policies, registry modules, providers and GPG keys, tags, runner
        and organization tokens, and its audit trail."""
        self._audit.delete_all_of(org_key, self._blobs)  # and the objects of its daily export
        self._run_store.delete_all_of(  # queued jobs, run tasks
            organization=org_key, blobs=self._blobs, revoke=self._revoke, before_run_deleted=self._policy_evaluations
        )
        for team in self._access.teams.teams_of(org_key):
            self._notifications.delete_all_of(team=team.id)
        for project in self._access.projects.projects_of(org_key):
            self._notifications.delete_all_of(project=project.id)
        for pool in self._workspace_store.agent_pools.of_organization(org_key):  # their tokens, before the pools go
            for token in self._access.accounts.tokens_of(pool.pool.id):
                self._revoke(token.id)
        # variable sets with their variables, SSH keys, agent pools with their agents and queued jobs, tags
        self._workspace_store.delete_all_of(organization=org_key)
        for owner in [*self._policy_store.policy_sets_of(org_key), *self._module_store.modules_of(org_key)]:
            self._vcs.release(owner["id"])  # a policy set's or a module's repository webhook, while its token is kept
        self._policy_store.delete_all_of(organization=org_key)  # policies, policy sets, parameters, versions
        self._module_store.delete_all_of(organization=org_key)  # modules, their versions and archives
        self._provider_store.delete_all_of(organization=org_key)  # providers, versions, platforms, GPG keys
        self._access.delete_all_of(organization=org_key)  # runner and organization tokens
        self._vcs.forget_organization(org_key)  # OAuth clients and their tokens
        self._explorer_store.delete_all_of(organization=org_key)  # the explorer's summaries
        if self._hyok is not None:  # OIDC and HYOK configurations, key versions, wrapped data keys
            self._hyok.delete_all_of(org_key)

    def _policy_evaluations(self, run_id: str) -> None:
        """A run's policy evaluations and their outcomes (the run store tells of each run before its item goes)."""
        self._evaluation_store.delete_all_of(run=run_id)

    def _revoke(self, token_id: str) -> None:
        try:
            self._accounts.revoke_token(token_id)
        except NotFound:
            pass
