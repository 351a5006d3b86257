"""The one composition root: builds the container of services for AWS, local mode and tests.

Local mode and AWS differ only in where the boto3 clients point (moto server vs AWS); unit tests
swap the adapters for in-memory twins. The services are the same objects in every case.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from terrace.adapters.blobs import BlobStore
from terrace.adapters.kms import Encryptor, MemoryEncryptor
from terrace.adapters.queues import EventPublisher, JobQueue, KickingJobQueue, MemoryEventPublisher, TableJobQueue
from terrace.adapters.runner_launchers import RunnerLauncher
from terrace.adapters.table import Table
from terrace.config import Settings
from terrace.services.access.accounts import AccountService
from terrace.services.access.authz import Authorizer
from terrace.services.access.organizations import OrganizationService
from terrace.services.access.web_sessions import WebSessionService
from terrace.services.events import EventService
from terrace.services.runs.comments import CommentService
from terrace.services.runs.configuration_versions import ConfigurationVersionService
from terrace.services.runs.cost_estimates import CostEstimateService
from terrace.services.runs.job_retries import JobRetries
from terrace.services.runs.jobs import JobService
from terrace.services.runs.logs import LogService
from terrace.services.runs.plans import PlanService
from terrace.services.runs.reaper import Reaper
from terrace.services.runs.run_queries import RunQueries
from terrace.services.runs.runs import RunService
from terrace.services.runs.scaler import Scaler
from terrace.services.runs.scheduler import RunScheduler
from terrace.services.runs.store import RunStore
from terrace.services.state.index import StateIndex
from terrace.services.state.versions import StateVersionService
from terrace.services.workspaces.locking import LockService
from terrace.services.workspaces.variables import VariableService
from terrace.services.workspaces.workspaces import WorkspaceService


@dataclass
class Container:
    settings: Settings
    table: Table
    blobs: BlobStore
    encryptor: Encryptor = field(default_factory=MemoryEncryptor)
    publisher: EventPublisher = field(default_factory=MemoryEventPublisher)
    launcher: RunnerLauncher | None = None  # starts runners: ECS tasks on AWS, processes locally
    scaler_kick: Callable[[], None] | None = None  # on AWS: wakes the scaler after a job is queued

    @cached_property
    def job_queue(self) -> JobQueue:
        queue: JobQueue = TableJobQueue(self.table)
        return KickingJobQueue(queue, self.scaler_kick) if self.scaler_kick else queue

    @cached_property
    def authz(self) -> Authorizer:
        return Authorizer()

    @cached_property
    def accounts(self) -> AccountService:
        return AccountService(self.table)

    @cached_property
    def web_sessions(self) -> WebSessionService:
        return WebSessionService(self.table, self.accounts, self.settings.url_signing_secret)

    @cached_property
    def organizations(self) -> OrganizationService:
        return OrganizationService(self.table, self.authz)

    @cached_property
    def workspaces(self) -> WorkspaceService:
        return WorkspaceService(self.table, self.authz, self.organizations)

    @cached_property
    def locks(self) -> LockService:
        locks = LockService(self.workspaces, unlock_checks=[self.state_versions.ensure_not_pending])
        locks.after_release.append(lambda ws: self.scheduler.promote(ws.id))
        return locks

    @cached_property
    def state_index(self) -> StateIndex:
        return StateIndex(self.table, self.blobs)

    @cached_property
    def state_versions(self) -> StateVersionService:
        return StateVersionService(
            self.table, self.blobs, self.settings, self.workspaces, self.state_index, self.organizations, self.publisher
        )

    # runs ---------------------------------------------------------------------------------
    @cached_property
    def configuration_versions(self) -> ConfigurationVersionService:
        versions = ConfigurationVersionService(self.table, self.blobs, self.workspaces, self.settings)
        versions.on_uploaded.append(lambda cv: self.runs.queue_for_upload(cv))
        versions.in_use.append(lambda cv: self.run_queries.uses_configuration(cv.workspace_id, cv.id))
        return versions

    @cached_property
    def variables(self) -> VariableService:
        return VariableService(self.table, self.encryptor, self.workspaces)

    @cached_property
    def run_store(self) -> RunStore:
        return RunStore(self.table, self.publisher)

    @cached_property
    def scheduler(self) -> RunScheduler:
        return RunScheduler(self.run_store, self.workspaces, self.job_queue, self.accounts, self.settings)

    @cached_property
    def runs(self) -> RunService:
        return RunService(
            self.run_store,
            self.scheduler,
            self.workspaces,
            self.configuration_versions,
            self.settings,
            organizations=self.organizations,
        )

    @cached_property
    def run_queries(self) -> RunQueries:
        return RunQueries(self.run_store, self.workspaces)

    @cached_property
    def cost_estimates(self) -> CostEstimateService:
        return CostEstimateService(self.runs, self.blobs)

    @cached_property
    def comments(self) -> CommentService:
        return CommentService(self.table, self.run_store, self.runs, self.workspaces)

    @cached_property
    def plans(self) -> PlanService:
        return PlanService(self.runs, self.workspaces, self.variables, self.blobs)

    @cached_property
    def logs(self) -> LogService:
        return LogService(
            self.table,
            self.blobs,
            self.settings.url_signing_secret,
            self.run_store,
            self.variables,
            self.settings.log_url_ttl_s,
        )

    @cached_property
    def jobs(self) -> JobService:
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
            plans=self.plans,
            costs=self.cost_estimates,
        )

    @cached_property
    def reaper(self) -> Reaper:
        return Reaper(
            self.run_store,
            self.scheduler,
            JobRetries(self.run_store, self.scheduler, self.logs, self.settings),
            self.settings,
        )

    @cached_property
    def scaler(self) -> Scaler:
        return Scaler(self.run_store, self.accounts, self.launcher, self.settings)

    @cached_property
    def events(self) -> EventService:
        events = EventService()
        events.subscribe("state.uploaded", lambda event: self.state_versions.index_uploaded(event))
        return events


def boto_clients(settings: Settings) -> dict[str, Any]:
    """boto3 clients, created once per process (cold start matters on Lambda)."""
    import boto3
    from botocore.config import Config

    session = boto3.session.Session(region_name=settings.region)
    common: dict[str, Any] = {"endpoint_url": settings.aws_endpoint_url} if settings.aws_endpoint_url else {}
    s3_config = Config(signature_version="s3v4", s3={"addressing_style": "path"})
    retry = Config(retries={"max_attempts": 5, "mode": "adaptive"})
    return {
        "dynamodb": session.client("dynamodb", config=retry, **common),
        "s3": session.client("s3", config=s3_config, **common),
        "sqs": session.client("sqs", config=retry, **common),
        "kms": session.client("kms", config=retry, **common),
        "ecs": session.client("ecs", config=retry, **common),
    }


def build_aws(settings: Settings) -> Container:
    """Wiring against real AWS or the moto server (same code; endpoint_url decides)."""
    from terrace.adapters.dynamo_table import DynamoTable
    from terrace.adapters.kms import KmsEncryptor
    from terrace.adapters.queues import SqsEventPublisher
    from terrace.adapters.runner_launchers import EcsLauncher
    from terrace.adapters.s3_blobs import S3Blobs
    from terrace.adapters.secrets import resolve_secrets

    settings = resolve_secrets(settings)
    clients = boto_clients(settings)
    kick = None
    if settings.scaler_function:
        scaler_function = settings.scaler_function
        kick = functools.partial(_invoke_async, settings, scaler_function)
    launcher = None
    if settings.ecs_cluster and settings.runner_task_definition:
        launcher = EcsLauncher(
            clients["ecs"],
            settings.ecs_cluster,
            settings.runner_task_definition,
            container_name=settings.runner_container_name,
            subnets=settings.runner_subnets,
            security_groups=settings.runner_security_groups,
            assign_public_ip=settings.runner_assign_public_ip,
        )
    return Container(
        settings=settings,
        table=DynamoTable(clients["dynamodb"], settings.table_name),
        blobs=S3Blobs(clients["s3"], settings.blob_bucket),
        encryptor=KmsEncryptor(clients["kms"], settings.kms_key_id or "alias/terrace"),
        scaler_kick=kick,
        publisher=SqsEventPublisher(clients["sqs"], settings.queue_urls.get("events", "")),
        launcher=launcher,
    )


def _invoke_async(settings: Settings, function_name: str) -> None:
    import boto3

    client = boto3.client("lambda", region_name=settings.region, endpoint_url=settings.aws_endpoint_url)
    client.invoke(FunctionName=function_name, InvocationType="Event", Payload=b"{}")


@functools.cache
def aws_container() -> Container:
    """The process-wide container of a Lambda function, built from the environment on first use."""
    return build_aws(Settings.from_env())


def build_memory(settings: Settings | None = None) -> Container:
    """Wiring for unit tests: in-memory twins of every adapter."""
    from terrace.adapters.memory_blobs import MemoryBlobs
    from terrace.adapters.memory_table import MemoryTable

    settings = settings or Settings(table_name="memory", blob_bucket="memory", url_signing_secret="test-secret")
    return Container(settings=settings, table=MemoryTable(), blobs=MemoryBlobs())
