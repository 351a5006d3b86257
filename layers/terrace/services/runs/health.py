"""A workspace's Health tab (web UI): its last health assessment (`services/runs/assessments.py`) with the drifted
resources and their changed attributes and the failing checks with their messages, read from the assessment's JSON
plan; assessments on or off; an assessment started now. The details come from the JSON plan (prior state values), so
only for callers who may read a plan's JSON (`READ_PLAN_JSON`); others see the counts. The JSON plan is read only
below `DETAIL_MAX_BYTES` (its size is checked before it is read)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from terrace.adapters.blobs import BlobStore
from terrace.domain import assessments as model
from terrace.domain.assessments import AssessmentResult, Drifted, FailingCheck
from terrace.domain.errors import Conflict, NotFound
from terrace.domain.principal import Principal
from terrace.domain.workspace import Workspace
from terrace.services.access.actions import Action
from terrace.services.runs.assessments import AssessmentService
from terrace.services.workspaces.workspaces import WorkspaceService

DETAIL_MAX_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class HealthReport:
    ws: Workspace
    enabled: bool
    result: AssessmentResult | None
    drifted: list[Drifted] = field(default_factory=list)
    failing: list[FailingCheck] = field(default_factory=list)
    details: str = "shown"  # shown, hidden (the caller may not read plan JSON), too-large, missing
    can_start: bool = False
    can_toggle: bool = False


class HealthPages:
    def __init__(self, assessments: AssessmentService, workspaces: WorkspaceService, blobs: BlobStore) -> None:
        self._assessments, self._workspaces, self._blobs = assessments, workspaces, blobs

    def report(self, principal: Principal, organization: str, name: str) -> HealthReport:
        ws = self._workspaces.get_by_name(principal, organization, name, Action.READ_RUNS)
        can = lambda action: self._workspaces.can(principal, action, ws)  # noqa: E731
        enabled = model.enabled(ws.extra)
        start, toggle = can(Action.QUEUE_RUN), can(Action.UPDATE_WORKSPACE)
        try:
            result: AssessmentResult | None = self._assessments.current(principal, ws.id)
        except NotFound:
            result = None
        if result is None or not result.json_key:
            return HealthReport(ws, enabled, result, details="missing", can_start=start, can_toggle=toggle)
        if not can(Action.READ_PLAN_JSON):
            return HealthReport(ws, enabled, result, details="hidden", can_start=start, can_toggle=toggle)
        info = self._blobs.head(result.json_key)
        if info is None:
            return HealthReport(ws, enabled, result, details="missing", can_start=start, can_toggle=toggle)
        if info.size > DETAIL_MAX_BYTES:
            return HealthReport(ws, enabled, result, details="too-large", can_start=start, can_toggle=toggle)
        try:
            plan = json.loads(self._blobs.get(result.json_key))
        except (NotFound, ValueError):
            return HealthReport(ws, enabled, result, details="missing", can_start=start, can_toggle=toggle)
        plan = plan if isinstance(plan, dict) else {}
        return HealthReport(
            ws,
            enabled,
            result,
            model.drifted_resources(plan),
            model.failing_checks(plan),
            can_start=start,
            can_toggle=toggle,
        )

    def set_enabled(self, principal: Principal, organization: str, name: str, on: bool) -> Workspace:
        ws = self._workspaces.get_by_name(principal, organization, name)
        return self._workspaces.update(principal, ws, {model.ENABLED_ATTRIBUTE: on})

    def start_now(self, principal: Principal, organization: str, name: str) -> None:
        """An assessment now (who may queue a plan may: an assessment is a refresh-only plan); Conflict when
        there is nothing to assess or a run holds the workspace."""
        ws = self._workspaces.get_by_name(principal, organization, name, Action.QUEUE_RUN)
        if AssessmentService.busy(ws):
            raise Conflict(f"a run holds workspace {ws.name}: start the assessment once it ends")
        if self._assessments.start(ws) != "started":
            raise Conflict(
                f"workspace {ws.name} has nothing to assess yet: it needs the remote execution mode, a state and an "
                "applied configuration"
            )
