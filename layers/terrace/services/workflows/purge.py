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
from typing import Any

from terrace.adapters.blobs import BlobStore
from terrace.adapters.table import Table
from terrace.domain import runs as run_model
from terrace.domain.errors import NotFound
from terrace.domain.plan_json import stored_plan_keys
from terrace.services.access.access_keys import teams_index
from terrace.services.access.accounts import AccountService
from terrace.services.notifications.configurations import NotificationConfigurations
from terrace.services.registry.modules import RegistryModuleService
from terrace.services.registry.providers import RegistryProviderService
from terrace.services.state.versions import StateVersionService
from terrace.services.workspaces.store import WorkspaceAreaStore
from terrace.services.workspaces.varsets import VariableSetService

log = logging.getLogger(__name__)

OPEN_RUNS = "runs#open"  # services/runs/store.py
RUNNER_TOKENS = "#runners#tokens"  # services/runs/scaler.py: RUNNER_TOKEN_SUBJECT + "#tokens"


class Purge:
    def __init__(
        self,
        table: Table,
        blobs: BlobStore,
        accounts: AccountService,
        state_versions: StateVersionService,
        varsets: VariableSetService,
        workspace_store: WorkspaceAreaStore,
        notifications: NotificationConfigurations,
        registry_modules: RegistryModuleService | None = None,
        registry_providers: RegistryProviderService | None = None,
    ) -> None:
        self._registry_modules = registry_modules
        self._registry_providers = registry_providers
        self._varsets = varsets
        self._workspace_store = workspace_store
        self._table = table
        self._blobs = blobs
        self._accounts = accounts
        self._state_versions = state_versions
        self._notifications = notifications

    def workspace_contents(self, workspace_id: str, org_key: str) -> None:
        """Everything stored under a workspace, except the workspace item and its name claim; and the workspace
        leaves the variable sets applied to it."""
        self._varsets.forget_workspace(org_key, workspace_id)
        for item in self._table.query(f"{workspace_id}#runs", index="gsi1"):
            self._run(run_model.run_from_item(item))
        for item in self._table.query(f"{workspace_id}#cvs", index="gsi1"):
            self._blobs.delete(f"config/{workspace_id}/{item['id']}.tar.gz")
            self._table.delete(item["pk"], item["sk"])
        for attached in self._table.query(f"{workspace_id}#tasks", index="gsi1"):  # services/runs/run_tasks.py
            self._table.delete(f"{attached['task_id']}#workspaces", workspace_id)
            self._table.delete(attached["pk"], attached["sk"])
        # its variables, its run triggers both ways, its place in the auto-destroy sweep's index
        self._workspace_store.delete_all_of(workspace=workspace_id)
        self._state_versions.purge(workspace_id)
        self._notifications.delete_all(workspace_id)

    def organization_contents(self, org_key: str) -> None:
        """What an organization holds beside its workspaces: variable sets, queued jobs, SSH keys, agent pools (their
        tokens, agents and queued jobs), registry modules, providers and GPG keys, tags, runner and organization
        tokens."""
        self._delete_all(self._table.query(f"org#{org_key}#jobs"))
        for team in self._table.query(teams_index(org_key), index="gsi1"):
            self._notifications.delete_all(team["id"])
        for pool in self._workspace_store.agent_pools.of_organization(org_key):  # their tokens, before the pools go
            for token in self._table.query(f"{pool.pool.id}#tokens", index="gsi1"):
                self._revoke(token["id"])
        # variable sets with their variables, SSH keys, agent pools with their agents and queued jobs, tags
        self._workspace_store.delete_all_of(organization=org_key)
        for task in self._table.query(f"org#{org_key}#tasks", index="gsi1"):  # services/runs/run_tasks.py
            self._delete_all(self._table.query(f"{task['pk']}#workspaces"))
            self._table.delete(task["pk"], task["sk"])
        self._delete_all(self._table.query(f"org#{org_key}#tasknames"))
        self._policies(org_key)
        if self._registry_modules is not None:
            self._registry_modules.purge_organization(org_key)  # services/registry/modules.py
        if self._registry_providers is not None:
            self._registry_providers.purge_organization(org_key)  # services/registry/providers.py (and GPG keys)
        for subject in (RUNNER_TOKENS, f"{org_key}#tokens"):
            for token in self._table.query(subject, index="gsi1"):
                if token.get("organization") == org_key:
                    self._revoke(token["id"])

    def _run(self, run: run_model.Run) -> None:
        for token_id in run.token_ids:
            self._revoke(token_id)
        for phase in (run.plan, run.apply):
            self._delete_all(self._table.query(f"{phase.id}#log"))
            self._blobs.delete(f"logs/{phase.id}.log")
            for key in stored_plan_keys(phase.artifact_key, phase.json_key):
                if key.startswith(f"plans/{run.id}/"):
                    self._blobs.delete(key)
        self._delete_all(self._table.query(f"{run.id}#events"))
        for stage in self._table.query(f"{run.id}#task-stages", index="gsi1"):  # services/runs/task_stages.py
            for result in self._table.query(f"{stage['pk']}#task-results", index="gsi1"):  # task_results.py
                if result.get("token_id"):
                    self._revoke(result["token_id"])
                self._table.delete(result["pk"], "taskrs#token")
                self._table.delete(result["pk"], result["sk"])
            self._table.delete(stage["pk"], stage["sk"])
        for pointer in self._table.query(f"{run.id}#policy-evaluations"):  # services/policies/evaluations.py
            self._delete_all(self._table.query(f"{pointer['sk']}#outcomes", index="gsi1"))
            self._table.delete(pointer["sk"], "poleval")
            self._table.delete(pointer["pk"], pointer["sk"])
        self._table.delete(OPEN_RUNS, f"{run.created_at}#{run.id}")
        self._table.delete(run.id, "run")

    def _policies(self, org_key: str) -> None:
        """Policies, policy sets, their parameters and versions (services/policies/)."""
        self._delete_all(self._table.query(f"org#{org_key}#policies", index="gsi1"))
        self._delete_all(self._table.query(f"org#{org_key}#policynames"))
        for policy_set in self._table.query(f"org#{org_key}#policy-sets", index="gsi1"):
            self._delete_all(self._table.query(f"{policy_set['pk']}#params", index="gsi1"))
            for version in self._table.query(f"{policy_set['pk']}#versions", index="gsi1"):
                for key in (version.get("blob_key"), version.get("bundle_key")):
                    if key:
                        self._blobs.delete(key)
                self._table.delete(version["pk"], version["sk"])
            self._table.delete(policy_set["pk"], policy_set["sk"])
        self._delete_all(self._table.query(f"org#{org_key}#polsetnames"))

    def _revoke(self, token_id: str) -> None:
        try:
            self._accounts.revoke_token(token_id)
        except NotFound:
            pass

    def _delete_all(self, items: list[dict[str, Any]]) -> None:
        if items:
            self._table.batch_delete([(item["pk"], item["sk"]) for item in items])
