"""Task stages (services/runs/task_stages.py, stage_progress.py), the registry of the features taking part in them, and
run tasks, the first of them (services/runs/run_tasks.py, task_results.py, task_delivery.py).

Mixed into `bootstrap.Container`. `stage_participants` is the registry: every feature that takes part in a run's
task stages adds its `StageParticipant` there (run tasks; OPA policy evaluations). The run service knows none of
them: it asks `task_stages` at each stage point, and `stage_progress` moves a run on from the events subscribed in
`subscribe_task_stages` (called by `events`, wiring/state_services.py) and from the reaper.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

from terrace.adapters.encryptor import Encryptor
from terrace.adapters.events import EventPublisher, EventQueue
from terrace.adapters.outbound import Outbound
from terrace.config import Settings

if TYPE_CHECKING:
    from terrace.domain.destinations import Allowance
    from terrace.services.access.accounts import AccountService
    from terrace.services.access.organizations import OrganizationService
    from terrace.services.events import EventService
    from terrace.services.policies.participant import PolicyStageParticipant
    from terrace.services.runs.agent_waits import AgentWaits
    from terrace.services.runs.comments import CommentService
    from terrace.services.runs.plans import PlanService
    from terrace.services.runs.run_pages import RunPages
    from terrace.services.runs.run_queries import RunQueries
    from terrace.services.runs.run_tasks import RunTaskService
    from terrace.services.runs.runs import RunService
    from terrace.services.runs.scheduler import RunScheduler
    from terrace.services.runs.stage_participants import StageParticipant
    from terrace.services.runs.stage_progress import StageProgress
    from terrace.services.runs.store import RunStore
    from terrace.services.runs.task_delivery import TaskDelivery
    from terrace.services.runs.task_results import TaskResultService
    from terrace.services.runs.task_stages import TaskStages
    from terrace.services.workspaces.workspaces import WorkspaceService


RUN_STATUS_CHANGED = "run.status_changed"  # published by services/runs/store.py


class TaskStageServices:
    settings: Settings
    encryptor: Encryptor
    publisher: EventPublisher
    event_queue: EventQueue | None
    outbound: Outbound
    # from the other areas
    accounts: AccountService
    organizations: OrganizationService
    run_store: RunStore
    scheduler: RunScheduler
    runs: RunService
    workspaces: WorkspaceService
    plans: PlanService
    comments: CommentService
    run_queries: RunQueries
    agent_waits: AgentWaits  # wiring/runner_services.py
    policy_participant: PolicyStageParticipant  # wiring/policy_services.py

    @cached_property
    def stage_participants(self) -> list[StageParticipant]:
        """The registry of the features that take part in task stages, asked in this order."""

        participants: list[StageParticipant] = [self.task_results, self.policy_participant]
        return participants

    @cached_property
    def task_stages(self) -> TaskStages:
        from terrace.services.runs.task_stages import TaskStages

        return TaskStages(self.run_store.stages, lambda: self.stage_participants)

    @cached_property
    def run_pages(self) -> RunPages:
        """What the UI's run pages show (services/runs/run_pages.py)."""
        from terrace.services.runs.run_pages import RunPages

        return RunPages(
            self.workspaces,
            self.runs,
            self.plans,
            self.stage_progress,
            self.comments,
            self.run_queries,
            self.agent_waits,
        )

    @cached_property
    def stage_progress(self) -> StageProgress:
        from terrace.services.runs.stage_progress import StageProgress

        return StageProgress(self.run_store, self.task_stages, self.scheduler, self.runs, self.workspaces)

    # run tasks ---------------------------------------------------------------------------
    @cached_property
    def _allowance(self) -> Allowance:
        from terrace.domain.destinations import Allowance

        return Allowance.parse(self.settings.outbound_allow)  # as `Container.outbound_allowance`

    @cached_property
    def run_tasks(self) -> RunTaskService:
        from terrace.services.runs.run_tasks import RunTaskService

        return RunTaskService(
            self.run_store.tasks, self.encryptor, self.organizations, self.workspaces, self._allowance
        )

    @cached_property
    def task_results(self) -> TaskResultService:
        from terrace.services.runs.task_results import TaskResultService

        return TaskResultService(
            self.run_store.results, self.run_tasks, self.runs, self.accounts, self.encryptor, self.publisher
        )

    @cached_property
    def task_delivery(self) -> TaskDelivery:
        from terrace.services.runs.task_delivery import TaskDelivery

        return TaskDelivery(
            self.task_results,
            self.run_tasks,
            self.run_store,
            self.workspaces,
            self.outbound,
            self._publish_later,
            self.settings.public_url,
        )

    def _publish_later(self, event: dict[str, Any], delay_s: int) -> None:
        if self.event_queue is not None:
            self.event_queue.publish(event, delay_s=delay_s)
        else:  # unit tests: the recording publisher
            self.publisher.publish({**event, "delay_s": delay_s})

    def subscribe_task_stages(self, events: EventService) -> None:
        from terrace.services.runs.stage_participants import STAGE_PROGRESSED
        from terrace.services.runs.task_results import DELIVER

        events.subscribe(STAGE_PROGRESSED, lambda event: self.stage_progress.progressed(event))
        events.subscribe(RUN_STATUS_CHANGED, lambda event: self.stage_progress.run_changed(event))
        events.subscribe(DELIVER, lambda event: self.task_delivery.handle(event))
