"""Task stages (services/runs/task_stages.py, stage_progress.py) and the registry of the features taking part in them.

Mixed into `bootstrap.Container`. `stage_participants` is the registry: every feature that takes part in a run's
task stages adds its `StageParticipant` there (run tasks; OPA policy evaluations). The run service knows none of
them: it asks `task_stages` at each stage point, and `stage_progress` moves a run on from the events subscribed in
`subscribe_task_stages` (called by `events`, wiring/state_services.py) and from the reaper.
"""

from __future__ import annotations

from functools import cached_property

from terrace.adapters.table import Table
from terrace.services.events import EventService
from terrace.services.policies.participant import PolicyStageParticipant
from terrace.services.runs.runs import RunService
from terrace.services.runs.scheduler import RunScheduler
from terrace.services.runs.stage_participants import STAGE_PROGRESSED, StageParticipant
from terrace.services.runs.stage_progress import StageProgress
from terrace.services.runs.store import RunStore
from terrace.services.runs.task_stages import TaskStages
from terrace.services.workspaces.workspaces import WorkspaceService

RUN_STATUS_CHANGED = "run.status_changed"  # published by services/runs/store.py


class TaskStageServices:
    table: Table
    # from the other areas
    run_store: RunStore
    scheduler: RunScheduler
    runs: RunService
    workspaces: WorkspaceService
    policy_participant: PolicyStageParticipant  # wiring/policy_services.py

    @cached_property
    def stage_participants(self) -> list[StageParticipant]:
        """The registry of the features that take part in task stages, asked in this order."""
        participants: list[StageParticipant] = [self.policy_participant]
        return participants

    @cached_property
    def task_stages(self) -> TaskStages:
        return TaskStages(self.table, lambda: self.stage_participants)

    @cached_property
    def stage_progress(self) -> StageProgress:
        return StageProgress(self.run_store, self.task_stages, self.scheduler, self.runs, self.workspaces)

    def subscribe_task_stages(self, events: EventService) -> None:
        events.subscribe(STAGE_PROGRESSED, lambda event: self.stage_progress.progressed(event))
        events.subscribe(RUN_STATUS_CHANGED, lambda event: self.stage_progress.run_changed(event))
