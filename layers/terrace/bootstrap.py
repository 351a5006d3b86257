"""The one composition root: builds the container of services for AWS, the embedded server and tests.

`build_aws` wires DynamoDB/S3/SQS/KMS (real AWS or the moto server: only the endpoint differs),
`build_embedded` one SQLite file, a blob folder and a key file in a data directory (`terrace serve`,
`make dev`), `build_memory` in-memory twins for unit tests. The services are the same objects in every case.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from terrace.adapters.blobs import BlobStore
from terrace.adapters.job_signal import LAMBDA_RECHECK_S, JobSignal
from terrace.adapters.kms import Encryptor, MemoryEncryptor
from terrace.adapters.queues import (
    EventPublisher,
    EventQueue,
    JobQueue,
    KickingJobQueue,
    MemoryEventPublisher,
    TableJobQueue,
)
from terrace.adapters.runner_launchers import RunnerLauncher
from terrace.adapters.table import Table
from terrace.config import Settings
from terrace.domain.workspace import Workspace
from terrace.services.access.accounts import AccountService
from terrace.services.access.authz import Authorizer
from terrace.services.access.grants import TableAccessResolver
from terrace.services.access.memberships import MembershipService
from terrace.services.access.oidc import CALLBACK_PATH, OidcConfig, OidcSignIn
from terrace.services.access.organizations import OrganizationService
from terrace.services.access.projects import ProjectService
from terrace.services.access.service_tokens import ServiceTokenService
from terrace.services.access.sso_teams import SsoTeamSync
from terrace.services.access.team_access import TeamAccessService
from terrace.services.access.teams import TeamService
from terrace.services.access.terraform_login import TerraformLoginService
from terrace.services.access.users import UserService
from terrace.services.access.web_sessions import WebSessionService
from terrace.services.admin.site import SiteAdminService
from terrace.services.admin.tool_versions import ToolVersionService
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
from terrace.services.state.backing_data import BackingDataService
from terrace.services.state.index import StateIndex
from terrace.services.state.versions import StateVersionService
from terrace.services.workspaces.locking import LockService
from terrace.services.workspaces.purge import OrganizationDeletion, Purge
from terrace.services.workspaces.remote_state import RemoteStateConsumers
from terrace.services.workspaces.retention import RetentionPolicyService
from terrace.services.workspaces.retention_sweep import RetentionSweep
from terrace.services.workspaces.ssh_keys import SSHKeyService
from terrace.services.workspaces.tags import TagService
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
    scaler_kick: Callable[..., None] | None = None  # on AWS: wakes the scaler (kick(), or kick(expect=org))
    event_queue: EventQueue | None = None  # the consumer side of `publisher` (SQS, or SQLite when embedded)
    database: Any = None  # the embedded server's SqliteDatabase (backups, closing)
    job_signal: JobSignal = field(default_factory=JobSignal)  # wakes waiting runners; in-process by default

    def close(self) -> None:
        """Release what the adapters hold open (the embedded database's connections)."""
        if self.database is not None:
            self.database.close()

    @cached_property
    def job_queue(self) -> JobQueue:
        queue: JobQueue = TableJobQueue(self.table, signal=self.job_signal)
        return KickingJobQueue(queue, self.scaler_kick) if self.scaler_kick else queue

    def expect_runner(self, ws: Workspace) -> None:
        """A configuration version of `ws` was created: its run comes once the upload ends. Start a runner now
        (remote execution only), so its start overlaps the upload."""
        if ws.effective_execution_mode(self.organizations.by_key(ws.organization).default_execution_mode) == "local":
            return
        if self.scaler_kick is not None:
            self.scaler_kick(expect=ws.organization)  # AWS: the scaler Lambda, invoked asynchronously
        else:
            self.scaler.expect(ws.organization)  # one process: the local scaler loop wakes at once

    @cached_property
    def authz(self) -> Authorizer:
        return Authorizer(TableAccessResolver(self.table))

    @cached_property
    def accounts(self) -> AccountService:
        return AccountService(self.table)

    @cached_property
    def users(self) -> UserService:
        return UserService(self.table, self.accounts)

    @cached_property
    def site_admin(self) -> SiteAdminService:
        return SiteAdminService(self.authz, self.organizations, self.workspaces, self.run_store, self.scheduler)

    @cached_property
    def tool_versions(self) -> ToolVersionService:
        return ToolVersionService(self.table, self.settings.tool_versions(), self.settings.default_tool)

    @cached_property
    def web_sessions(self) -> WebSessionService:
        return WebSessionService(self.table, self.accounts, self.settings.url_signing_secret)

    @cached_property
    def oidc(self) -> OidcSignIn | None:
        """UI sign-in through the operator's OpenID Connect issuer, when one is configured."""
        s = self.settings
        if not s.oidc_issuer:
            return None
        config = OidcConfig(
            s.oidc_issuer, s.oidc_client_id, s.oidc_client_secret, s.public_url + CALLBACK_PATH, s.oidc_groups_claim
        )
        return OidcSignIn(self.table, self.accounts, self.web_sessions, config, on_groups=self.sso_teams.sync)

    @cached_property
    def terraform_login(self) -> TerraformLoginService:
        return TerraformLoginService(self.table, self.accounts)

    @cached_property
    def organizations(self) -> OrganizationService:
        return OrganizationService(self.table, self.authz)

    # teams and access (services/access/) ------------------------------------------------
    @cached_property
    def teams(self) -> TeamService:
        return TeamService(self.table, self.authz, self.organizations)

    @cached_property
    def memberships(self) -> MembershipService:
        return MembershipService(self.table, self.organizations, self.accounts, self.teams)

    @cached_property
    def projects(self) -> ProjectService:
        return ProjectService(self.table, self.teams)

    @cached_property
    def team_access(self) -> TeamAccessService:
        return TeamAccessService(self.table, self.teams, self.workspaces, self.projects)

    @cached_property
    def sso_teams(self) -> SsoTeamSync:
        return SsoTeamSync(self.table, self.accounts, self.teams, self.memberships)

    @cached_property
    def service_tokens(self) -> ServiceTokenService:
        return ServiceTokenService(self.accounts, self.teams, self.organizations)

    @cached_property
    def workspaces(self) -> WorkspaceService:
        workspaces = WorkspaceService(self.table, self.authz, self.organizations)
        workspaces.settle_terraform_version = lambda requested: self.tool_versions.settle(requested)
        return workspaces

    @cached_property
    def tags(self) -> TagService:
        return TagService(self.table, self.organizations, self.workspaces)

    @cached_property
    def remote_state_consumers(self) -> RemoteStateConsumers:
        return RemoteStateConsumers(self.workspaces)

    @cached_property
    def purge(self) -> Purge:
        return Purge(self.table, self.blobs, self.accounts, self.state_versions)

    @cached_property
    def organization_deletion(self) -> OrganizationDeletion:
        return OrganizationDeletion(self.organizations, self.workspaces, self.purge)

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

    @cached_property
    def state_backing_data(self) -> BackingDataService:
        return BackingDataService(self.table, self.blobs, self.state_versions, self.workspaces)

    # runs ---------------------------------------------------------------------------------
    @cached_property
    def configuration_versions(self) -> ConfigurationVersionService:
        versions = ConfigurationVersionService(self.table, self.blobs, self.workspaces, self.settings)
        versions.on_uploaded.append(lambda cv: self.runs.queue_for_upload(cv))
        versions.on_created.append(lambda cv, ws: self.expect_runner(ws))
        versions.in_use.append(lambda cv: self.run_queries.uses_configuration(cv.workspace_id, cv.id))
        return versions

    @cached_property
    def variables(self) -> VariableService:
        return VariableService(self.table, self.encryptor, self.workspaces)

    @cached_property
    def ssh_keys(self) -> SSHKeyService:
        return SSHKeyService(self.table, self.encryptor, self.organizations, self.workspaces)

    @cached_property
    def run_store(self) -> RunStore:
        return RunStore(self.table, self.publisher)

    @cached_property
    def scheduler(self) -> RunScheduler:
        return RunScheduler(self.run_store, self.workspaces, self.job_queue, self.accounts, self.settings)

    @cached_property
    def runs(self) -> RunService:
        runs = RunService(
            self.run_store,
            self.scheduler,
            self.workspaces,
            self.configuration_versions,
            self.settings,
            organizations=self.organizations,
        )
        runs.resolve_version = lambda requested: self.tool_versions.resolve(requested)
        return runs

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
            ssh_keys=self.ssh_keys,
            plans=self.plans,
            costs=self.cost_estimates,
            signal=self.job_signal,
        )

    @cached_property
    def job_retries(self) -> JobRetries:
        return JobRetries(self.run_store, self.scheduler, self.logs, self.settings)

    @cached_property
    def reaper(self) -> Reaper:
        return Reaper(self.run_store, self.scheduler, self.job_retries, self.settings, self.retention_sweep)

    @cached_property
    def retention_policies(self) -> RetentionPolicyService:
        return RetentionPolicyService(self.authz, self.organizations, self.workspaces)

    @cached_property
    def retention_sweep(self) -> RetentionSweep:
        return RetentionSweep(
            self.table,
            self.blobs,
            self.organizations,
            self.workspaces,
            self.retention_policies,
            self.configuration_versions,
            self.run_store,
        )

    @cached_property
    def scaler(self) -> Scaler:
        return Scaler(
            self.run_store,
            self.accounts,
            self.launcher,
            self.settings,
            organizations=lambda: [org.key for org in self.organizations.all()],
        )

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
    events = SqsEventPublisher(clients["sqs"], settings.queue_urls.get("events", ""))
    return Container(
        settings=settings,
        table=DynamoTable(clients["dynamodb"], settings.table_name),
        blobs=S3Blobs(clients["s3"], settings.blob_bucket),
        encryptor=KmsEncryptor(clients["kms"], settings.kms_key_id or "alias/terrace"),
        scaler_kick=kick,
        publisher=events,
        event_queue=events,
        launcher=launcher,
        job_signal=JobSignal(recheck_s=LAMBDA_RECHECK_S),  # enqueues may happen in other Lambdas
    )


EMBEDDED_DATABASE = "terrace.db"  # table and events queue
EMBEDDED_BLOBS = "blobs"
EMBEDDED_KEY = "master.key"  # the envelope-encryption key of sensitive values (0600)


def build_embedded(settings: Settings) -> Container:
    """Wiring for one machine: everything in `settings.data_dir` (SQLite in WAL mode, a blob folder whose
    presigned-style URLs the app serves itself, AES-GCM envelope encryption). Runners are local processes
    that the caller (`terrace.local`) attaches as the launcher."""
    from pathlib import Path

    from terrace.adapters.definitions import EVENTS_QUEUE
    from terrace.adapters.fs_blobs import FsBlobs, UrlSigner
    from terrace.adapters.local_crypto import LocalEncryptor
    from terrace.adapters.sqlite_events import SqliteEventQueue
    from terrace.adapters.sqlite_table import SqliteDatabase, SqliteTable

    if not settings.data_dir:
        raise ValueError("build_embedded needs settings.data_dir")
    settings.require_url_signing_secret()  # the blob URLs are signed with it
    data = Path(settings.data_dir)
    data.mkdir(parents=True, exist_ok=True, mode=0o700)
    database = SqliteDatabase(data / EMBEDDED_DATABASE)
    events = SqliteEventQueue(database, visibility_s=EVENTS_QUEUE.visibility_timeout_s)
    signer = UrlSigner(settings.url_signing_secret, settings.public_url)
    max_put = max(settings.max_config_bytes, settings.max_inline_state_bytes)
    return Container(
        settings=settings,
        table=SqliteTable(database),
        blobs=FsBlobs(data / EMBEDDED_BLOBS, signer, max_put_bytes=max_put),
        encryptor=LocalEncryptor(data / EMBEDDED_KEY),
        publisher=events,
        event_queue=events,
        database=database,
    )


def _invoke_async(settings: Settings, function_name: str, expect: str | None = None) -> None:
    """Invoke the scaler without waiting; `expect`: the organization a configuration version was created in."""
    import json

    import boto3

    client = boto3.client("lambda", region_name=settings.region, endpoint_url=settings.aws_endpoint_url)
    payload = {"expect": expect} if expect else {}
    client.invoke(FunctionName=function_name, InvocationType="Event", Payload=json.dumps(payload).encode())


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
