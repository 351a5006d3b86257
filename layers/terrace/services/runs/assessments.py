"""Health assessments (`domain/assessments.py`): the schedule's sweep, the assessment runs, their results.

- `sweep_if_due` (the reaper's tick: a Lambda schedule on AWS, a timer locally) reads the schedule index (one
  query; empty while no workspace has assessments on) and starts an assessment for each workspace due: a
  plan-only, refresh-only run of the configuration of its latest run, on its current state, in the lowest lane
  (`scheduler.lane_of`). A speculative plan takes no lock (`-lock=false`); a workspace whose head run holds it
  is skipped until its next slot, and so is an assessment claimed while a run holds it (`skip_if_busy`).
- `on_run_status` (subscribed to `run.status_changed` by `wiring/`) turns a finished assessment run into an
  `AssessmentResult` read from its JSON plan, makes it the workspace's current one and publishes
  `assessment.completed` with the notification triggers it fires.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from typing import Any

from terrace.adapters.blobs import BlobStore
from terrace.adapters.events import EventPublisher
from terrace.config import Settings
from terrace.domain import assessments as model
from terrace.domain import clock
from terrace.domain import runs as rs
from terrace.domain.assessments import AssessmentResult
from terrace.domain.errors import NotFound
from terrace.domain.principal import Principal
from terrace.domain.runs import Run, suffix
from terrace.domain.workspace import Workspace
from terrace.services.access.actions import Action
from terrace.services.runs.configuration_versions import UPLOADED, ConfigurationVersionService
from terrace.services.runs.runs import RunService
from terrace.services.runs.scheduler import RunScheduler
from terrace.services.runs.side_runs import new_side_run, queue_side_run
from terrace.services.runs.store import ConditionFailed, RunStore
from terrace.services.workspaces.workspaces import WorkspaceService

log = logging.getLogger("terrace.assessments")
COMPLETED = "assessment.completed"
ASSESSOR = "terrace-assessments"
SKIPPED = "skipped: a run holds the workspace"
EXPAND_S = 600  # how soon a new workspace of an organization enforcing assessments joins the schedule


class AssessmentService:
    def __init__(
        self,
        store: RunStore,
        scheduler: RunScheduler,
        runs: RunService,
        workspaces: WorkspaceService,
        cvs: ConfigurationVersionService,
        blobs: BlobStore,
        events: EventPublisher,
        settings: Settings,
    ) -> None:
        self._store, self._scheduler, self._runs = store, scheduler, runs
        self._assessments = store.assessments
        self._workspaces, self._cvs, self._blobs, self._events = workspaces, cvs, blobs, events
        self._interval = settings.assessment_interval_s

    # the schedule ------------------------------------------------------------------------------------
    def sweep_if_due(self, now: float | None = None) -> dict[str, int] | None:
        now = clock.epoch() if now is None else now
        entries = self._assessments.schedule()
        if not entries:
            return None
        summary = {"started": 0, "skipped": 0}
        for entry in entries:
            if str(entry["sk"]).startswith("org#"):
                self._expand(entry, now)
                continue
            if model.due_at(entry, self._interval) > now:
                continue
            try:
                outcome = self._assess(entry, now)
            except Exception:
                log.exception("could not start the assessment of %s", entry.get("workspace_id"))
                continue
            summary[outcome] = summary.get(outcome, 0) + 1
        return summary

    def _expand(self, entry: dict[str, Any], now: float) -> None:
        """An organization enforcing assessments: every workspace of it gets its entry (new ones within
        `EXPAND_S`)."""
        if float(entry.get("due_at") or 0) > now:
            return
        organization = str(entry["organization"])
        scheduled = {str(e["sk"]) for e in self._assessments.schedule()}
        for ws in self._workspaces.all_in(organization):
            if ws.id not in scheduled:
                self._assessments.schedule_workspace(ws.id, organization, now)
        self._assessments.put_entry({**entry, "due_at": now + min(self._interval, EXPAND_S)})

    def _enforced(self, organization: str) -> bool:
        return self._assessments.enforced(organization)

    def _assess(self, entry: dict[str, Any], now: float) -> str:
        workspace_id = str(entry["workspace_id"])
        try:
            ws = self._workspaces.load(workspace_id)
        except NotFound:
            self._assessments.unschedule(workspace_id)
            return "removed"
        if not model.enabled(ws.extra) and not self._enforced(ws.organization):
            self._assessments.unschedule(workspace_id)
            return "removed"
        started = "skipped" if self.busy(ws) or self._assessing(ws) else self.start(ws)
        due = model.next_due(ws.id, now, self._interval)
        self._assessments.schedule_workspace(ws.id, ws.organization, float(entry.get("enabled_at") or now), due)
        return started

    def _assessing(self, ws: Workspace) -> bool:
        """Its previous assessment has not ended yet (slow runners): no second one piles up behind it."""
        latest = self._store.latest_assessment(ws.id)
        return latest is not None and not latest.final

    @staticmethod
    def busy(ws: Workspace) -> bool:
        """A run holds the workspace: its head run holds the lock until it ends (`current_run_id` stays after)."""
        return ws.lock is not None and ws.lock.holder_kind == "run"

    def start(self, ws: Workspace) -> str:
        """Queue an assessment of `ws` ("started"), or "skipped" when there is nothing to assess."""
        if self._workspaces.execution_mode(ws) != "remote" or not ws.current_state_version_id or not ws.latest_run_id:
            return "skipped"
        cv = self._cvs.load(self._store.load(ws.latest_run_id).configuration_version_id)
        if cv.status != UPLOADED:
            return "skipped"
        version, tool, problem = self._runs.resolve_version(ws.terraform_version, ws.tool)
        if problem:
            return "skipped"
        run = new_side_run(
            ws,
            cv.id,
            created_by=ASSESSOR,
            message="Health assessment",
            source=ASSESSOR,
            terraform_version=version,
            tool=tool,
            refresh_only=True,
            assessment=True,
        )
        run.resolved_variables = self._runs.resolve_variables(ws, [])
        queue_side_run(self._store, self._scheduler, run)
        return "started"

    def skip_if_busy(self, run: Run) -> bool:
        """At claim time: an assessment whose workspace a run holds ends canceled, unrun (True)."""
        if not run.assessment or not self.busy(self._workspaces.load(run.workspace_id)):
            return False
        self._scheduler.finish(run, run.version, rs.CANCELED, SKIPPED)
        return True

    # results -----------------------------------------------------------------------------------------
    def on_run_status(self, event: dict[str, Any]) -> None:
        if str(event.get("to")) not in rs.FINAL:
            return
        try:
            run = self._store.load(str(event.get("run_id", "")))
        except NotFound:
            return
        if not run.assessment or run.status in (rs.CANCELED, rs.FORCE_CANCELED, rs.DISCARDED):
            return
        result = self._result_of(run)
        try:
            self._assessments.record(result)
        except ConditionFailed:
            return  # redelivered: recorded already
        health = {"result_id": result.id, "drifted": result.drifted, "succeeded": result.succeeded,
                  "checks_failing": bool(result.checks.get("fail") or result.checks.get("error"))}  # fmt: skip
        try:
            self._workspaces.mutate(run.workspace_id, lambda ws: dataclasses.replace(ws, health=health))
        except NotFound:
            return
        self._events.publish(
            {
                "type": COMPLETED,
                "result_id": result.id,
                "run_id": run.id,
                "workspace_id": run.workspace_id,
                "triggers": result.triggers(),
                "at": result.created_at,
            }
        )

    def _result_of(self, run: Run) -> AssessmentResult:
        succeeded = run.status == rs.PLANNED_AND_FINISHED
        plan: dict[str, Any] = {}
        if succeeded and run.plan.json_key:
            try:
                loaded = json.loads(self._blobs.get(run.plan.json_key))
                plan = loaded if isinstance(loaded, dict) else {}
            except (NotFound, ValueError):
                succeeded = False
        drifted, undrifted = model.drift_counts(plan)
        return AssessmentResult(
            id=f"{model.RESULT_PREFIX}-{suffix(run.id)}",
            workspace_id=run.workspace_id,
            organization=run.organization,
            run_id=run.id,
            created_at=clock.now_iso(),
            succeeded=succeeded,
            drifted=succeeded and drifted > 0,
            error_msg=None if succeeded else (run.error_message or "the assessment failed"),
            checks=model.check_counts(plan),
            resources_drifted=drifted,
            resources_undrifted=undrifted,
            json_key=run.plan.json_key if succeeded else None,
        )

    # reads -------------------------------------------------------------------------------------------
    def current(self, principal: Principal, workspace_id: str) -> AssessmentResult:
        ws = self._workspaces.get(principal, workspace_id, Action.READ_RUNS)
        result_id = self._assessments.current_id(ws.id)
        if result_id is None:
            raise NotFound(f"workspace {workspace_id} has no assessment result")
        return self._load(result_id)

    def get(self, principal: Principal, result_id: str, action: Action = Action.READ_RUNS) -> AssessmentResult:
        missing = NotFound(f"assessment result {result_id} not found")
        try:
            result = self._load(result_id)
            self._workspaces.get(principal, result.workspace_id, action)
        except NotFound as exc:
            raise missing from exc
        return result

    def json_url(self, principal: Principal, result_id: str, ttl_s: int) -> str:
        """The assessment's JSON plan: its prior state and variable values, so as a plan's JSON (`READ_PLAN_JSON`:
        read runs and read state), never with read runs alone."""
        result = self.get(principal, result_id, Action.READ_PLAN_JSON)
        if not result.json_key:
            raise NotFound(f"assessment result {result_id} has no JSON output")
        return self._blobs.presign_get(result.json_key, ttl_s)

    def latest_of(self, workspace_ids: list[str]) -> dict[str, AssessmentResult]:
        """The current result of each workspace that has one (for pages that already read the workspaces)."""
        return self._assessments.current_of(workspace_ids)

    def _load(self, result_id: str) -> AssessmentResult:
        result = self._assessments.find(result_id)
        if result is None:
            raise NotFound(f"assessment result {result_id} not found")
        return result
