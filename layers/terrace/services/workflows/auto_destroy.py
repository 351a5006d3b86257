"""Ephemeral workspaces: the destroy runs of workspaces that came due, their reminders, and what a run changes.
A workflow across the workspaces area (the workspace and its marker) and the runs area (the destroy run).

- `sweep_if_due` (the reaper's `Sweep`, each tick: every minute on AWS, every second locally) reads the markers
  whose next look has come (one query of a sparse index, `services/workspaces/store_auto_destroy.py`; nothing while no
  workspace is ephemeral). For each it re-reads the workspace: a marker that disagrees with it is rewritten or
  dropped; a workspace due gets a destroy run (`RunService.queue_auto_destroy`: auto-applied, source
  `tfe-auto-destroy`, its id derived from the workspace and due time, so two sweeps queue one run) and its marker
  goes; one 24 or 12 hours from its due time gets its reminder (`workspace.auto_destroy_reminder`, published once:
  the marker's conditional write records it).
- `on_run_status` (a `run.status_changed` subscriber made in `wiring/`): an auto-destroy run that ended publishes
  `workspace.auto_destroy_run_results`, and one that destroyed (applied, or had nothing left to destroy) clears
  `auto-destroy-at` as HCP does; any other run that applied is activity: a workspace with an
  `auto-destroy-activity-duration` is due that long from now.
The clock is injected (`now`): tests move it, nothing sleeps."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from terrace.adapters.table import ConditionFailed
from terrace.domain import auto_destroy as ad
from terrace.domain import clock
from terrace.domain import runs as rs
from terrace.domain.errors import NotFound, TerraceError
from terrace.domain.workspace import Workspace
from terrace.services.runs.configuration_versions import ConfigurationVersionService
from terrace.services.runs.runs import RunService
from terrace.services.runs.store import RunStore
from terrace.services.workspaces.workspaces import WorkspaceService

log = logging.getLogger("terrace.auto_destroy")
DESTROYED = (rs.APPLIED, rs.PLANNED_AND_FINISHED)

Publish = Callable[[dict[str, Any]], None]


class AutoDestroy:
    def __init__(
        self,
        workspaces: WorkspaceService,
        runs: RunService,
        run_store: RunStore,
        configuration_versions: ConfigurationVersionService,
        publish: Publish,
        now: Callable[[], float] = clock.epoch,
    ) -> None:
        self._workspaces, self._runs, self._store, self._cvs = workspaces, runs, run_store, configuration_versions
        self._publish, self._now = publish, now

    # the reaper's tick ---------------------------------------------------------------------------
    def sweep_if_due(self) -> dict[str, int] | None:
        now = self._now()
        markers = self._workspaces.markers.due(clock.iso(datetime.fromtimestamp(now, UTC)))
        if not markers:
            return None
        summary = {"queued": 0, "reminded": 0, "resynced": 0}
        for marker in markers:
            try:
                summary[self._look(marker, now)] += 1
            except Exception:  # one workspace's failure must not stop the others
                log.exception("auto-destroy could not look at workspace %s", marker.get("workspace_id"))
        return summary

    def _look(self, marker: dict[str, Any], now: float) -> str:
        try:
            ws = self._workspaces.load(str(marker["workspace_id"]))
        except NotFound:
            self._workspaces.markers.drop(str(marker["workspace_id"]))
            return "resynced"
        if ws.auto_destroy_at != marker["due"] or ws.auto_destroy_at is None:
            self._workspaces.markers.sync(ws)
            return "resynced"
        if ad.is_due(ws.auto_destroy_at, now):
            self._queue(ws, ws.auto_destroy_at)
            self._workspaces.markers.drop(ws.id)
            return "queued"
        reminded = tuple(int(h) for h in marker.get("reminded", []))
        hours = ad.reminders_due(ws.auto_destroy_at, reminded, now)
        if hours and self._workspaces.markers.advance(marker, (*reminded, *hours)):
            self._publish(
                {
                    "type": ad.REMINDER_EVENT,
                    "workspace_id": ws.id,
                    "auto_destroy_at": ws.auto_destroy_at,
                    "hours": min(hours),
                    "at": clock.now_iso(),
                }
            )
        return "reminded"

    def _queue(self, ws: Workspace, due_at: str) -> None:
        cv = self._cvs.latest_uploaded(ws, finalize=True)
        if cv is None:
            log.warning("auto-destroy: workspace %s has no configuration version to destroy with", ws.id)
            return
        try:
            run = self._runs.queue_auto_destroy(ws, cv, ad.run_id_for(ws.id, due_at), due_at)
        except ConditionFailed:
            return  # another sweep queued it
        except TerraceError as exc:  # the workspace refuses it (destroy plans not allowed)
            log.warning("auto-destroy: no destroy run queued in %s: %s", ws.id, exc.detail)
            return
        log.info("auto-destroy: run %s queued in workspace %s (due at %s)", run.id, ws.id, due_at)

    # run.status_changed ---------------------------------------------------------------------------
    def on_run_status(self, event: dict[str, Any]) -> None:
        to = str(event.get("to", ""))
        if to not in rs.FINAL or not isinstance(event.get("run_id"), str):
            return
        try:
            run = self._store.load(event["run_id"])
        except NotFound:
            return
        if run.source == ad.SOURCE:
            if to in DESTROYED:
                self._change(run.workspace_id, lambda ws: dataclasses.replace(ws, auto_destroy_at=None))
            self._publish(
                {
                    "type": ad.RESULT_EVENT,
                    "workspace_id": run.workspace_id,
                    "run_id": run.id,
                    "status": to,
                    "at": str(event.get("at") or clock.now_iso()),
                }
            )
        elif to == rs.APPLIED:
            self._change(run.workspace_id, _pushed)

    def _change(self, workspace_id: str, change: Callable[[Workspace], Workspace]) -> None:
        try:
            before = self._workspaces.load(workspace_id)
        except NotFound:
            return
        if change(before) == before:
            return  # nothing to write (most workspaces are not ephemeral)
        updated = self._workspaces.mutate(workspace_id, change)
        self._workspaces.markers.sync(updated)


def _pushed(ws: Workspace) -> Workspace:
    if ws.auto_destroy_activity_duration is None:
        return ws
    return dataclasses.replace(ws, auto_destroy_at=ad.due_after_activity(ws.auto_destroy_activity_duration))
