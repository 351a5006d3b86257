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
from terrace.domain import auto_destroy
from terrace.domain import runs as run_model
from terrace.domain.errors import NotFound
from terrace.domain.plan_json import stored_plan_keys
from terrace.services.access.accounts import AccountService
from terrace.services.access.store import AccessStore
from terrace.services.notifications.store import NotificationStore
from terrace.services.policies.store import PolicyStore
from terrace.services.policies.store_evaluations import EvaluationStore
from terrace.services.registry.store import ModuleStore
from terrace.services.registry.store_providers import ProviderStore
from terrace.services.state.store import StateStore
from terrace.services.workspaces.run_triggers import RunTriggerService
from terrace.services.workspaces.varsets import VariableSetService

log = logging.getLogger(__name__)

OPEN_RUNS = "runs#open"  # services/runs/store.py


class Purge:
    def __init__(
        self,
        table: Table,
        blobs: BlobStore,
        accounts: AccountService,
        access: AccessStore,
        state: StateStore,
        varsets: VariableSetService,
        run_triggers: RunTriggerService,
        notifications: NotificationStore,
        stores: tuple[PolicyStore, EvaluationStore, ModuleStore, ProviderStore],
    ) -> None:
        self._policy_store, self._evaluation_store, self._module_store, self._provider_store = stores
        self._varsets = varsets
        self._run_triggers = run_triggers
        self._table = table
        self._blobs = blobs
        self._accounts = accounts
        self._access = access
        self._state = state
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
        self._delete_all(self._table.query(f"{workspace_id}#vars", index="gsi1"))
        self._delete_all(self._table.query(f"{workspace_id}#varkeys"))
        self._state.delete_all_of(workspace=workspace_id)
        self._run_triggers.remove_for_workspace(workspace_id)  # both ways: as a source and as a target
        self._notifications.delete_all_of(workspace=workspace_id)
        self._table.delete(*auto_destroy.marker_key(workspace_id))  # its place in the auto-destroy sweep's index

    def organization_contents(self, org_key: str) -> None:
        """What an organization holds beside its workspaces: variable sets, queued jobs, SSH keys, agent pools (their
        tokens, agents and queued jobs), registry modules, providers and GPG keys, tags, runner and organization
        tokens."""
        self._varsets.purge_organization(org_key)
        self._delete_all(self._table.query(f"org#{org_key}#jobs"))
        for team in self._access.teams.teams_of(org_key):
            self._notifications.delete_all_of(team=team.id)
        self._delete_all(self._table.query(f"org#{org_key}#ssh-keys", index="gsi1"))  # services/workspaces/ssh_keys.py
        for pool in self._table.query(f"org#{org_key}#agent-pools", index="gsi1"):  # services/workspaces/agent_pools.py
            for token in self._table.query(f"{pool['pk']}#tokens", index="gsi1"):
                self._revoke(token["id"])
            self._delete_all(self._table.query(f"{pool['pk']}#agents", index="gsi1"))
            self._delete_all(self._table.query(f"org#{org_key}#agent-pool#{pool['pk']}#jobs"))
            self._table.delete(pool["pk"], pool["sk"])
        for task in self._table.query(f"org#{org_key}#tasks", index="gsi1"):  # services/runs/run_tasks.py
            self._delete_all(self._table.query(f"{task['pk']}#workspaces"))
            self._table.delete(task["pk"], task["sk"])
        self._delete_all(self._table.query(f"org#{org_key}#tasknames"))
        self._policy_store.delete_all_of(organization=org_key)  # policies, policy sets, parameters, versions
        self._module_store.delete_all_of(organization=org_key)  # modules, their versions and archives
        self._provider_store.delete_all_of(organization=org_key)  # providers, versions, platforms, GPG keys
        for tag in self._table.query(f"org#{org_key}#tags"):
            self._table.delete(tag["id"], "tag")
            self._table.delete(tag["pk"], tag["sk"])
        self._access.delete_all_of(organization=org_key)  # runner and organization tokens

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
        self._evaluation_store.delete_all_of(run=run.id)  # its policy evaluations and their outcomes
        self._table.delete(OPEN_RUNS, f"{run.created_at}#{run.id}")
        self._table.delete(run.id, "run")

    def _revoke(self, token_id: str) -> None:
        try:
            self._accounts.revoke_token(token_id)
        except NotFound:
            pass

    def _delete_all(self, items: list[dict[str, Any]]) -> None:
        if items:
            self._table.batch_delete([(item["pk"], item["sk"]) for item in items])
