"""The actions read API (HCP Terraform's `terraform-actions`): a workspace's actions, one action, and its
invocations aggregated by run. Read from what the workspace's runs recorded when their plans finished
(`domain/terraform_actions.py`): one query of the workspace's runs per request, no other read, no write. The
actions listed are those the newest run that recorded them declares; an action's invocations are those of every
run of the workspace that planned one. Reading them is reading the workspace's runs (`READ_RUNS`)."""

from __future__ import annotations

import builtins
from collections.abc import Mapping

from terrace.domain import terraform_actions as model
from terrace.domain.errors import NotFound
from terrace.domain.principal import Principal
from terrace.domain.runs import Run
from terrace.domain.terraform_actions import ActionView, RunSummary
from terrace.services.access.authz import Action
from terrace.services.runs.store import RunStore
from terrace.services.workspaces.workspaces import WorkspaceService


def _planned(run: Run, address: str) -> model.PlannedInvocations | None:
    for entry in run.action_invocations:
        if entry.get("address") == address:
            return model.PlannedInvocations(**entry)
    return None


class TerraformActionService:
    def __init__(self, store: RunStore, workspaces: WorkspaceService) -> None:
        self._store, self._workspaces = store, workspaces

    def list(self, principal: Principal, workspace_id: str, filters: Mapping[str, str]) -> list[ActionView]:
        ws = self._workspaces.get(principal, workspace_id, Action.READ_RUNS)
        found = self._actions(ws.id, self._store.list_for_workspace(ws.id))
        provider, module = filters.get("filter[provider]"), filters.get("filter[module_address]")
        return [
            a
            for a in found
            if (not provider or a.declared.provider == provider) and (not module or a.declared.module_address == module)
        ]

    def get(self, principal: Principal, action_id: str) -> ActionView:
        return self._find(principal, action_id)[0]

    def run_summary(
        self, principal: Principal, action_id: str, filters: Mapping[str, str]
    ) -> builtins.list[RunSummary]:
        """The runs that planned invocations of the action, newest first, as the filters narrow them."""
        action, runs = self._find(principal, action_id)
        summaries = []
        for run in runs:
            planned = _planned(run, action.declared.address)
            if planned is not None:
                summaries.append(RunSummary(action.id, run, planned))
        return [s for s in summaries if _matches(s, filters)]

    def _find(self, principal: Principal, action_id: str) -> tuple[ActionView, builtins.list[Run]]:
        missing = NotFound(f"action {action_id} not found")
        workspace_id = model.workspace_of(action_id)
        if workspace_id is None:
            raise missing
        try:
            ws = self._workspaces.get(principal, workspace_id, Action.READ_RUNS)
        except NotFound as exc:
            raise missing from exc
        runs = self._store.list_for_workspace(ws.id)
        for action in self._actions(ws.id, runs):
            if action.id == action_id:
                return action, runs
        raise missing

    @staticmethod
    def _actions(workspace_id: str, runs: builtins.list[Run]) -> builtins.list[ActionView]:
        """The actions the newest recording run declares (`runs` newest first)."""
        latest = next((run for run in runs if run.declared_actions is not None), None)
        if latest is None:
            return []
        views = []
        for entry in latest.declared_actions or []:
            declared = model.DeclaredAction(**entry)
            address = declared.address
            action_id = model.action_id(workspace_id, address)
            declaring = [r for r in runs if any(a.get("address") == address for a in r.declared_actions or [])]
            invoking = [(r, p) for r in runs if (p := _planned(r, address)) is not None]
            ran = sum(p.direct + p.lifecycle for r, p in invoking if model.aggregate_status(r) != "not_invoked")
            last = invoking[0][0].id if invoking else None
            views.append(
                ActionView(
                    id=action_id,
                    workspace_id=workspace_id,
                    declared=declared,
                    created_at=declaring[-1].created_at,
                    updated_at=declaring[0].created_at,
                    last_invocation=(model.invocation_id(action_id, last), last) if last else None,
                    invocation_count=ran,
                )
            )
        return views


def _matches(summary: RunSummary, filters: Mapping[str, str]) -> bool:
    def among(key: str, value: str) -> bool:
        wanted = filters.get(key)
        return not wanted or value in {w.strip() for w in wanted.split(",")}

    run = summary.run
    return (
        among("filter[run][id]", run.id)
        and among("filter[invocation_method]", summary.method)
        and among("filter[aggregate_invocation_status]", model.aggregate_status(run))
        and among("filter[source]", run.source)
        and among("filter[invoked_by]", run.created_by or "system:not_a_user")
    )
