"""Runs (services/runs/): configuration versions, runs and the workspace queue (scheduler), reads across runs,
cost estimates, comments, plans, logs, query runs, module test runs, Terraform actions and health assessments; the
runners' side (the job queue, jobs, the reaper, the scaler) is `runner_services.py`.

Mixed into `bootstrap.Container`: each service is built on first use from the container's adapters and its
other services (what this area takes from the others is declared below as plain attributes)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING

from terrace.adapters.blobs import BlobStore
from terrace.adapters.events import EventPublisher
from terrace.adapters.job_queue import JobQueue
from terrace.adapters.lanes import Lanes
from terrace.adapters.table import Table
from terrace.config import Settings

if TYPE_CHECKING:
    from terrace.domain.workspace import Workspace
    from terrace.services.access.accounts import AccountService
    from terrace.services.access.organizations import OrganizationService
    from terrace.services.admin.settings import AdminSettings
    from terrace.services.admin.tool_versions import ToolVersionService
    from terrace.services.outbox_relay import OutboxRelay
    from terrace.services.runs.assessments import AssessmentService
    from terrace.services.runs.comments import CommentService
    from terrace.services.runs.configuration_backing_data import ConfigurationBackingData
    from terrace.services.runs.configuration_versions import ConfigurationVersionService
    from terrace.services.runs.cost_estimates import CostEstimateService
    from terrace.services.runs.logs import LogService
    from terrace.services.runs.module_test_runs import ModuleTestRunService
    from terrace.services.runs.plan_exports import PlanExportService
    from terrace.services.runs.plans import PlanService
    from terrace.services.runs.query_runs import QueryRunService
    from terrace.services.runs.run_queries import RunQueries
    from terrace.services.runs.runs import RunService
    from terrace.services.runs.scaler import Scaler
    from terrace.services.runs.scheduler import RunScheduler
    from terrace.services.runs.store import RunStore
    from terrace.services.runs.task_stages import TaskStages
    from terrace.services.runs.terraform_actions import TerraformActionService
    from terrace.services.workspaces.effective_variables import EffectiveVariables
    from terrace.services.workspaces.variables import VariableService
    from terrace.services.workspaces.workspaces import WorkspaceService


class RunServices:
    settings: Settings
    table: Table
    blobs: BlobStore
    publisher: EventPublisher
    scaler_kick: Callable[..., None] | None
    lanes: Lanes  # the dispatcher's priority lanes: SQS on AWS, SQLite embedded, memory in unit tests
    # the runners' side (wiring/runner_services.py)
    job_queue: JobQueue
    scaler: Scaler
    # from the other areas
    accounts: AccountService
    organizations: OrganizationService
    tool_versions: ToolVersionService
    admin_settings: AdminSettings
    workspaces: WorkspaceService
    variables: VariableService
    effective_variables: EffectiveVariables
    task_stages: TaskStages  # wiring/task_stage_services.py

    def expect_runner(self, ws: Workspace, speculative: bool = False) -> None:
        """A configuration version of `ws` was created: its run comes once the upload ends. Start a runner now
        (remote execution only: local runs run nowhere here, agent runs on their pool's agents), so its start
        overlaps the upload; a speculative configuration version's runner is one of the speculative lane."""
        mode = self.workspaces.execution_mode(ws)
        if mode in ("local", "agent"):
            return
        if self.scaler_kick is not None:
            self.scaler_kick(expect=ws.organization, speculative=speculative)  # AWS: the scaler Lambda, async
        else:
            self.scaler.expect(ws.organization, speculative)  # one process: the local scaler loop wakes at once

    @cached_property
    def configuration_versions(self) -> ConfigurationVersionService:
        from terrace.services.runs.configuration_versions import ConfigurationVersionService

        return ConfigurationVersionService(
            self.run_store.configurations,
            self.blobs,
            self.workspaces,
            self.settings,
            on_uploaded=[lambda cv: self.runs.queue_for_upload(cv)],
            on_created=[lambda cv, ws: self.expect_runner(ws, cv.speculative)],
            in_use=[lambda cv: self.run_queries.uses_configuration(cv.workspace_id, cv.id)],
            configuration_of_run=self.run_queries.configuration_of,
        )

    @cached_property
    def configuration_backing_data(self) -> ConfigurationBackingData:
        from terrace.services.runs.configuration_backing_data import ConfigurationBackingData

        return ConfigurationBackingData(self.configuration_versions, self.blobs, self.workspaces)

    @cached_property
    def run_store(self) -> RunStore:
        from terrace.services.runs.store import RunStore

        return RunStore(self.table, self.outbox_relay)

    @cached_property
    def outbox_relay(self) -> OutboxRelay:
        """Run transitions stage their events in their own transaction; this publishes them (after the commit, and
        the reaper's sweep for what a kill left staged)."""
        from terrace.adapters.table_outbox import TableOutbox
        from terrace.services.outbox_relay import OutboxRelay

        return OutboxRelay(TableOutbox(self.table), self.publisher)

    @cached_property
    def scheduler(self) -> RunScheduler:
        from terrace.services.runs.scheduler import RunScheduler

        return RunScheduler(
            self.run_store,
            self.workspaces,
            self.job_queue,
            self.accounts,
            self.settings,
            self.task_stages,
            lanes=self.lanes,
        )

    @cached_property
    def runs(self) -> RunService:
        from terrace.services.runs.runs import RunService

        return RunService(
            self.run_store,
            self.scheduler,
            self.workspaces,
            self.configuration_versions,
            self.settings,
            organizations=self.organizations,
            resolve_version=lambda requested, tool: self.tool_versions.resolve(requested, tool),
            resolve_variables=lambda ws, run_variables: self.effective_variables.resolve_for_run(ws, run_variables),
            cost_estimation_on=lambda: bool(self.admin_settings.current("cost-estimation")["enabled"]),
        )

    @cached_property
    def run_queries(self) -> RunQueries:
        from terrace.services.runs.run_queries import RunQueries

        return RunQueries(self.run_store, self.workspaces)

    @cached_property
    def cost_estimates(self) -> CostEstimateService:
        from terrace.services.runs.cost_estimates import CostEstimateService

        return CostEstimateService(self.runs, self.blobs)

    @cached_property
    def comments(self) -> CommentService:
        from terrace.services.runs.comments import CommentService

        return CommentService(self.run_store, self.runs, self.workspaces)

    @cached_property
    def plans(self) -> PlanService:
        from terrace.services.runs.plans import PlanService

        return PlanService(
            self.runs, self.workspaces, self.variables, self.blobs, self.settings.plan_json_redirect_bytes
        )

    @cached_property
    def logs(self) -> LogService:
        from terrace.services.runs.logs import LogService

        return LogService(
            self.blobs,
            self.settings.url_signing_secret,
            self.run_store,
            self.variables,
            self.settings.log_url_ttl_s,
            read_wait_s=self.settings.log_read_wait_s,
        )

    @cached_property
    def query_runs(self) -> QueryRunService:
        from terrace.services.runs.query_runs import QueryRunService

        return QueryRunService(self.run_store, self.scheduler, self.runs, self.workspaces, self.configuration_versions)

    @cached_property
    def plan_exports(self) -> PlanExportService:
        from terrace.services.runs.plan_exports import PlanExportService

        return PlanExportService(self.run_store, self.runs, self.plans, self.workspaces, self.blobs)

    @cached_property
    def module_test_runs(self) -> ModuleTestRunService:
        from terrace.services.runs.module_test_runs import ModuleTestRunService

        return ModuleTestRunService(
            self.run_store, self.scheduler, self.runs, self.workspaces, self.configuration_versions
        )

    @cached_property
    def terraform_actions(self) -> TerraformActionService:
        from terrace.services.runs.terraform_actions import TerraformActionService

        return TerraformActionService(self.run_store, self.workspaces)

    @cached_property
    def assessments(self) -> AssessmentService:
        from terrace.services.runs.assessments import AssessmentService

        return AssessmentService(
            self.run_store,
            self.scheduler,
            self.runs,
            self.workspaces,
            self.configuration_versions,
            self.blobs,
            self.publisher,
            self.settings,
        )
