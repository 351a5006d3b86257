"""What a successful apply sets off through run triggers: a subscriber of `run.status_changed` (made in
`wiring/`, run by the events worker: the `events` Lambda on AWS, the local worker thread embedded), never a call
from the run service.

A run that reached `applied` queues a run in each workspace that names its workspace as a source, with that
workspace's latest configuration version (a workspace without one is skipped, logged). Each queued run carries
the chain of workspaces whose applies led to it; a trigger that comes back to a workspace already in the chain
stops there (logged), so triggers never loop. The events queue delivers at least once: the run queued for a
(source run, workspace) pair has an id derived from both, and its conditional write refuses a second one."""

from __future__ import annotations

import logging
from typing import Any

from terrace.adapters.table import ConditionFailed
from terrace.domain import runs as rs
from terrace.domain.errors import NotFound, TerraceError
from terrace.domain.run_triggers import Origin, chain_of
from terrace.domain.runs import Run
from terrace.services.runs.configuration_versions import ConfigurationVersionService
from terrace.services.runs.runs import RunService
from terrace.services.runs.store import RunStore
from terrace.services.workspaces.run_triggers import RunTriggerService
from terrace.services.workspaces.workspaces import WorkspaceService

log = logging.getLogger("terrace.run_triggers")
RUN_STATUS_CHANGED = "run.status_changed"


class RunTriggerFanout:
    def __init__(
        self,
        run_store: RunStore,
        runs: RunService,
        workspaces: WorkspaceService,
        configuration_versions: ConfigurationVersionService,
        run_triggers: RunTriggerService,
    ) -> None:
        self._store, self._runs, self._workspaces = run_store, runs, workspaces
        self._cvs, self._triggers = configuration_versions, run_triggers

    def on_event(self, event: dict[str, Any]) -> None:
        self.handle(event)

    def handle(self, event: dict[str, Any]) -> list[Run]:
        """The `run.status_changed` subscriber: the runs it queued (none unless the run applied)."""
        if event.get("to") != rs.APPLIED or not isinstance(event.get("run_id"), str):
            return []
        try:
            source_run = self._store.load(event["run_id"])
            source = self._workspaces.load(source_run.workspace_id)
        except NotFound:
            return []  # deleted since: nothing to trigger
        if source_run.status != rs.APPLIED:
            return []
        chain = (*chain_of(source_run.trigger), source.id)
        queued = []
        for trigger in self._triggers.outbound(source.id):
            if trigger.workspace_id in chain:
                log.info(
                    "run trigger %s: run %s would queue a run in workspace %s, already in its chain %s; stopped",
                    trigger.id,
                    source_run.id,
                    trigger.workspace_id,
                    " -> ".join(chain),
                )
                continue
            origin = Origin(trigger.id, source_run.id, source.id, source.name, chain)
            run = self._queue(trigger.workspace_id, origin, source_run.created_by)
            if run is not None:
                queued.append(run)
        return queued

    def _queue(self, workspace_id: str, origin: Origin, created_by: str) -> Run | None:
        try:
            target = self._workspaces.load(workspace_id)
        except NotFound:
            return None
        cv = self._cvs.latest_uploaded(target, finalize=True)
        if cv is None:
            log.info(
                "run trigger %s: workspace %s has no configuration version; no run queued for run %s",
                origin.run_trigger_id,
                target.id,
                origin.source_run_id,
            )
            return None
        try:
            run = self._runs.queue_triggered(target, cv, origin, created_by)
        except ConditionFailed:
            log.info(
                "run trigger %s: run %s already queued its run in %s",
                origin.run_trigger_id,
                origin.source_run_id,
                target.id,
            )
            return None
        except TerraceError as exc:  # the workspace refuses the run (say, a destroy plan it does not allow)
            log.warning("run trigger %s: no run queued in %s: %s", origin.run_trigger_id, target.id, exc.detail)
            return None
        log.info(
            "run trigger %s: run %s queued run %s in workspace %s",
            origin.run_trigger_id,
            origin.source_run_id,
            run.id,
            target.id,
        )
        return run
