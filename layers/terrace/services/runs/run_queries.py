"""Reads across runs: the organization's run list and queue, queue positions, the latest run of
workspaces, whether a configuration version is still needed. Callers check access unless noted."""

from __future__ import annotations

from typing import Any

from terrace.domain import runs as rs
from terrace.domain.errors import NotFound
from terrace.domain.principal import Principal
from terrace.domain.runs import Run
from terrace.domain.workspace import Workspace
from terrace.services.access.authz import Action
from terrace.services.runs.store import RunStore
from terrace.services.workspaces.workspaces import WorkspaceService


class RunQueries:
    def __init__(self, store: RunStore, workspaces: WorkspaceService) -> None:
        self._store, self._workspaces = store, workspaces

    def readable(self, principal: Principal, run_id: str) -> tuple[Run, Workspace]:
        """A run the caller may read and its workspace, as `RunService.get` decides (the workspace read once:
        a run poll's document needs it for its permissions too)."""
        run = self._store.load(run_id)
        try:
            if run.query:  # read as a query run only (`query_runs.py`)
                raise NotFound(f"run {run_id} not found")
            ws = self._workspaces.get(principal, run.workspace_id, Action.READ_RUNS)
        except NotFound as exc:
            raise NotFound(f"run {run_id} not found") from exc
        return run, ws

    def events(self, principal: Principal, run_id: str) -> tuple[Run, list[dict[str, Any]]]:
        """A run the caller may read and its run events, oldest first."""
        run, _ = self.readable(principal, run_id)
        return run, self._store.events(run.id)

    def event(self, principal: Principal, event_id: str) -> tuple[Run, dict[str, Any]]:
        """One run event and its run, when the caller may read the run; otherwise as absent as an unknown id."""
        event = self._store.event(event_id)
        try:
            run, _ = self.readable(principal, event["run_id"])
        except NotFound as exc:
            raise NotFound(f"run event {event_id} not found") from exc
        return run, event

    def event_ids(self, principal: Principal, run: Run, ws: Workspace) -> list[str]:
        """The ids of the run events of a run already read with its workspace `ws` (checked again here: the
        grants read for this request are reused)."""
        if ws.id != run.workspace_id:
            raise NotFound(f"run {run.id} not found")
        try:
            self._workspaces.authorize(principal, Action.READ_RUNS, ws)
        except NotFound as exc:
            raise NotFound(f"run {run.id} not found") from exc
        return [e["id"] for e in self._store.events(run.id)]

    def configuration_of(self, run_id: str) -> str | None:
        """A run's configuration version id (None for an unknown run); no permission check."""
        try:
            return self._store.load(run_id).configuration_version_id
        except NotFound:
            return None

    def uses_configuration(self, workspace_id: str, cv_id: str) -> bool:
        """A run of the workspace that has not ended still needs this configuration version."""
        return any(
            r.configuration_version_id == cv_id and not r.final for r in self._store.list_for_workspace(workspace_id)
        )

    def current_of(self, principal: Principal, workspaces: list[Workspace]) -> dict[str, Run]:
        """workspace id -> the run its status is (`domain/runs.py: current_of`: its current run while underway,
        else its latest), for the workspaces whose runs the caller may read (one batch read)."""
        readable = self._workspaces.allowed(principal, Action.READ_RUNS, workspaces)
        ids = {run_id for ws in readable for run_id in (ws.current_run_id, ws.latest_run_id) if run_id}
        runs = {run.id: run for run in self._store.load_many(sorted(ids))}
        shown = {
            ws.id: rs.current_of(runs.get(ws.current_run_id or ""), runs.get(ws.latest_run_id or "")) for ws in readable
        }
        return {ws_id: run for ws_id, run in shown.items() if run is not None}

    def organization_queue_for(self, principal: Principal, organization: str) -> list[Run]:
        """The organization's queue as the caller sees it: NotFound unless they may read the organization, empty
        unless it lets them read its workspaces."""
        name, allowed = self._workspaces.organization_grant(principal, organization, Action.READ_WORKSPACE)
        return self.organization_queue(name) if allowed else []

    def organization_queue(self, organization: str) -> list[Run]:
        """Runs of the organization queued for or holding a runner, in queue order (caller checks access)."""
        entries = [e for e in self._store.open_runs() if e["organization"] == organization and e["status"] in rs.ACTIVE]
        runs = [run for run in self._store.load_many([e["run_id"] for e in entries]) if not (run.query or run.test)]
        return sorted(runs, key=lambda r: (r.queued_at or r.created_at, r.id))

    def queue_positions(self, runs: list[Run]) -> dict[str, int]:
        """position-in-queue of each run, from one read of the open-runs index: pending runs count within
        their workspace queue, queued runs within their organization's queue, others are 0."""
        if not any(run.status == rs.PENDING or run.status in rs.QUEUED for run in runs):
            return {run.id: 0 for run in runs}  # a running or ended run has no position: no index read
        entries = self._store.open_runs()  # oldest first
        positions: dict[str, int] = {}
        for run in runs:
            if run.status == rs.PENDING:
                ahead = [
                    e["run_id"] for e in entries if e["status"] == rs.PENDING and e["workspace_id"] == run.workspace_id
                ]
            elif run.status in rs.QUEUED:
                queued = [e for e in entries if e["status"] in rs.QUEUED and e["organization"] == run.organization]
                ahead = [
                    e["run_id"] for e in sorted(queued, key=lambda e: (e.get("queued_at") or e["sk"], e["run_id"]))
                ]
            else:
                ahead = []
            positions[run.id] = ahead.index(run.id) + 1 if run.id in ahead else 0
        return positions

    def workspace_queue(self, ws: Workspace) -> list[Run]:
        """The workspace's queue, of a workspace the caller already read: its current run while it has not ended,
        then the runs waiting for it (pending, not speculative), oldest first (caller checks access)."""
        runs = list(reversed(self._store.list_for_workspace(ws.id)))  # oldest first
        head = [r for r in runs if r.id == ws.current_run_id and not r.final and r.status != rs.PENDING]
        return head + [r for r in runs if r.status == rs.PENDING and not r.plan_only]

    def list_for_organization(self, principal: Principal, organization: str) -> list[Run]:
        """Runs of the organization's workspaces the caller may read, newest first."""
        workspaces = self._workspaces.allowed(
            principal, Action.READ_RUNS, self._workspaces.list(principal, organization)
        )
        runs = [run for ws in workspaces for run in self._store.list_for_workspace(ws.id)]
        return sorted(runs, key=lambda r: (r.created_at, r.id), reverse=True)
