"""The runners' side of runs (services/runs/): the job queue and the runner's jobs (claims, uploads, retries,
workload identity tokens), the reaper that watches them, and the dispatcher that starts runners: the scaler, its
slots, turns, warm window, and each runner's enrollment.

Mixed into `bootstrap.Container`: each service is built on first use from the container's adapters and its
other services (what this part takes from the others is declared below as plain attributes)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING

from terrace.adapters.blobs import BlobStore
from terrace.adapters.caller_identity import CallerIdentity
from terrace.adapters.job_queue import JobQueue
from terrace.adapters.job_signal import JobSignal
from terrace.adapters.lanes import Lanes
from terrace.adapters.runner_launcher import RunnerLauncher
from terrace.adapters.table import Table
from terrace.adapters.table_job_queue import TableJobQueue
from terrace.config import Settings

if TYPE_CHECKING:
    from terrace.services.access.accounts import AccountService
    from terrace.services.access.authz import Authorizer
    from terrace.services.access.organizations import OrganizationService
    from terrace.services.access.projects import ProjectService
    from terrace.services.access.runner_enrollment import RunnerEnrollments
    from terrace.services.access.store import AccessStore
    from terrace.services.access.workload_issuer import WorkloadIssuer
    from terrace.services.admin.settings import AdminSettings
    from terrace.services.admin.tool_versions import ToolVersionService
    from terrace.services.audit.export import AuditExport
    from terrace.services.outbox_relay import OutboxRelay
    from terrace.services.runs.agent_waits import AgentWaits
    from terrace.services.runs.assessments import AssessmentService
    from terrace.services.runs.configuration_versions import ConfigurationVersionService
    from terrace.services.runs.cost_estimates import CostEstimateService
    from terrace.services.runs.job_retries import JobRetries
    from terrace.services.runs.job_uploads import JobUploads
    from terrace.services.runs.jobs import JobService
    from terrace.services.runs.logs import LogService
    from terrace.services.runs.plan_exports import PlanExportService
    from terrace.services.runs.plans import PlanService
    from terrace.services.runs.reaper import Reaper
    from terrace.services.runs.runner_credentials import RunnerCredentials
    from terrace.services.runs.runner_slots import RunnerSlots
    from terrace.services.runs.runner_turns import RunnerTurns
    from terrace.services.runs.runs import RunService
    from terrace.services.runs.scaler import Scaler
    from terrace.services.runs.scheduler import RunScheduler
    from terrace.services.runs.stage_progress import StageProgress
    from terrace.services.runs.store import RunStore
    from terrace.services.runs.warm_window import WarmWindow
    from terrace.services.runs.workload_identity import WorkloadTokens
    from terrace.services.workflows.auto_destroy import AutoDestroy
    from terrace.services.workflows.retention_sweep import RetentionSweep
    from terrace.services.workspaces.agent_pools import AgentPoolService
    from terrace.services.workspaces.agents import AgentService
    from terrace.services.workspaces.ssh_keys import SSHKeyService
    from terrace.services.workspaces.variables import VariableService
    from terrace.services.workspaces.workspaces import WorkspaceService


class RunnerServices:
    settings: Settings
    table: Table
    blobs: BlobStore
    launcher: RunnerLauncher | None
    caller_identity: CallerIdentity | None
    scaler_kick: Callable[..., None] | None
    logs_warm_up: Callable[[], None] | None  # AWS: the logs function readied as the scaler takes a window's wake
    job_signal: JobSignal
    scaler_wake: threading.Event  # the scaler's wake-up, which the job signal sets on every enqueue
    lanes: Lanes  # the dispatcher's priority lanes: SQS on AWS, SQLite embedded, memory in unit tests
    # the runs (wiring/run_services.py)
    run_store: RunStore
    outbox_relay: OutboxRelay
    scheduler: RunScheduler
    runs: RunService
    configuration_versions: ConfigurationVersionService
    logs: LogService
    plans: PlanService
    cost_estimates: CostEstimateService
    assessments: AssessmentService
    # from the other areas
    authz: Authorizer
    accounts: AccountService
    access_store: AccessStore
    organizations: OrganizationService
    projects: ProjectService
    workload_issuer: WorkloadIssuer
    tool_versions: ToolVersionService
    admin_settings: AdminSettings
    workspaces: WorkspaceService
    variables: VariableService
    ssh_keys: SSHKeyService
    agents: AgentService
    agent_pools: AgentPoolService
    stage_progress: StageProgress  # wiring/task_stage_services.py
    retention_sweep: RetentionSweep  # a use case (wiring/workflow_services.py); the reaper takes it as a `Sweep`
    audit_export: AuditExport  # the audit trail's daily export (wiring/audit_services.py), one of the reaper's sweeps
    plan_exports: PlanExportService  # wiring/run_services.py: expired plan export bundles, one of the reaper's sweeps
    auto_destroy: AutoDestroy  # a use case (wiring/workflow_services.py); the reaper takes it as a `Sweep`

    @cached_property
    def job_queue(self) -> JobQueue:
        return TableJobQueue(self.table, signal=self.job_signal)  # the lanes wake the scaler (`kicking_lanes.py`)

    @cached_property
    def jobs(self) -> JobService:
        from terrace.services.runs.jobs import JobService

        return JobService(
            self.run_store,
            self.scheduler,
            self.runs,
            self.workspaces,
            self.configuration_versions,
            self.variables,
            self.accounts,
            self.logs,
            self.blobs,
            self.settings,
            queue=self.job_queue,
            authz=self.authz,
            ssh_keys=self.ssh_keys,
            plans=self.plans,
            costs=self.cost_estimates,
            signal=self.job_signal,
            tool_of=lambda version: self.tool_versions.tool_of(version),
            agents=self.agents,
            workload=self.workload_tokens,
            skip_assessment=lambda run: self.assessments.skip_if_busy(run),
        )

    @cached_property
    def workload_tokens(self) -> WorkloadTokens:
        from terrace.services.runs.workload_identity import WorkloadTokens

        return WorkloadTokens(
            self.workload_issuer, self.organizations, self.projects, ttl_s=self.settings.phase_deadline_s
        )

    @cached_property
    def job_uploads(self) -> JobUploads:
        from terrace.services.runs.job_uploads import JobUploads

        return JobUploads(self.run_store, self.blobs, self.authz, self.settings)

    @cached_property
    def job_retries(self) -> JobRetries:
        from terrace.services.runs.job_retries import JobRetries

        return JobRetries(self.run_store, self.scheduler, self.logs, self.settings)

    @cached_property
    def reaper(self) -> Reaper:
        from terrace.services.runs.reaper import Reaper

        return Reaper(
            self.run_store,
            self.scheduler,
            self.job_retries,
            self.settings,
            self.retention_sweep,
            stages=self.stage_progress,
            slots=self.runner_slots,
            sweeps=(self.outbox_relay, self.auto_destroy, self.assessments, self.audit_export, self.plan_exports),
            phase_timeout=lambda phase: self.admin_settings.phase_timeout_s(phase),
            coalesce_wakes=getattr(self.lanes, "coalesced", contextlib.nullcontext),  # AWS: one scaler wake a pass
        )

    @cached_property
    def scaler(self) -> Scaler:
        from terrace.services.runs.scaler import Scaler

        return Scaler(
            self.run_store,
            self.launcher,
            self.settings,
            self.lanes,
            self.runner_slots,
            self.runner_credentials,
            wake=self.scaler_wake,
            warm_up=self.logs_warm_up,  # AWS: the logs function readied by the invocation that takes a window's wake
        )

    @cached_property
    def runner_credentials(self) -> RunnerCredentials:
        from terrace.services.runs.runner_credentials import RunnerCredentials

        return RunnerCredentials(self.accounts, self.runner_enrollments, self.settings)

    @cached_property
    def warm_window(self) -> WarmWindow:
        """A workspace opened wakes the dispatcher with its organization: on AWS the scaler Lambda, invoked off the
        request's thread once a minute per API instance (the scaler takes the deployment's wake claim and readies
        the logs function: `Scaler.scale_once`); in one process the local scaler loop (a set and an event). The
        read writes nothing."""
        from terrace.services.runs.warm_window import WarmWindow

        minutes, mode = self.settings.warm_window_minutes, self.workspaces.execution_mode
        may_queue = lambda principal, ws: self.workspaces.permissions(principal, ws)["can-queue-run"]  # noqa: E731
        if (kick := self.scaler_kick) is not None:
            return WarmWindow(minutes, mode, may_queue, lambda org: kick(warm=org), background=True)
        return WarmWindow(minutes, mode, may_queue, lambda org: self.scaler.warm(org))

    @cached_property
    def runner_slots(self) -> RunnerSlots:
        from terrace.services.runs.runner_slots import RunnerSlots

        return RunnerSlots(self.run_store.slots, self.settings.max_runners)

    @cached_property
    def runner_turns(self) -> RunnerTurns:
        from terrace.services.runs.runner_turns import RunnerTurns

        return RunnerTurns(self.run_store, self.runner_slots, self.settings.max_runners)

    @cached_property
    def runner_enrollments(self) -> RunnerEnrollments:
        from terrace.services.access.runner_enrollment import RunnerEnrollments, RunnerIdentity

        identity = None
        if self.caller_identity is not None and self.settings.runner_task_role_arn:
            role = self.settings.runner_task_role_arn
            identity = RunnerIdentity(self.caller_identity, self.settings.public_url, role)
        return RunnerEnrollments(self.access_store.sign_in, self.accounts, identity=identity)

    @cached_property
    def agent_waits(self) -> AgentWaits:
        from terrace.services.runs.agent_waits import AgentWaits

        return AgentWaits(self.agent_pools)
