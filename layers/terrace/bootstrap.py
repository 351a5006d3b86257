"""The one composition root: builds the container of services for AWS, the embedded server and tests.

`Container` holds the adapters (its fields) and builds every service from them on first use: the services of
each area are the cached properties of its part in `terrace/wiring/` (`access_services.py`,
`workspace_services.py`, `state_services.py`, `run_services.py`) and the use cases spanning them
(`workflow_services.py`). The builders choose the adapters:
`build_aws` DynamoDB/S3/SQS/KMS/ECS (real AWS or the moto server: only the endpoint differs;
`wiring/aws_adapters.py`), `build_embedded` one SQLite file, a blob folder and a key file in a data directory
(`terrace serve`, `make dev`; `wiring/embedded_adapters.py`), `build_memory` in-memory twins for unit tests;
what the first two build alike (forges, git clones, the GitHub App, SMTP mail, key wrappers) is
`wiring/shared_adapters.py`. The services are the same objects in every case.
"""

from __future__ import annotations

import functools
import importlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from terrace.adapters import tenant_identity
from terrace.adapters.blobs import BlobStore
from terrace.adapters.caller_identity import CallerIdentity
from terrace.adapters.condition_job_signal import LAMBDA_RECHECK_S, ConditionJobSignal
from terrace.adapters.encryptor import Encryptor
from terrace.adapters.events import EventPublisher, EventQueue
from terrace.adapters.forge import Forge
from terrace.adapters.github_app import GitHubApp
from terrace.adapters.hcl_reader import HclReader
from terrace.adapters.held_reads import HeldReadsTable
from terrace.adapters.httpx_outbound import HttpxOutbound
from terrace.adapters.job_signal import JobSignal
from terrace.adapters.key_wrapper import KeyWrapper
from terrace.adapters.lanes import Lanes
from terrace.adapters.log_sink import LogSink
from terrace.adapters.mail import Mail
from terrace.adapters.memory_lanes import MemoryLanes
from terrace.adapters.outbound import Outbound
from terrace.adapters.policy_engine import PolicyEngine
from terrace.adapters.repository_clone import RepositoryClone
from terrace.adapters.runner_launcher import RunnerLauncher
from terrace.adapters.signing_keys import SigningKeyStore
from terrace.adapters.table import Table
from terrace.config import Settings
from terrace.domain import clock, ip_ranges
from terrace.domain.destinations import Allowance
from terrace.domain.ip_ranges import IPRanges
from terrace.wiring import shared_adapters as shared
from terrace.wiring.access_services import AccessServices
from terrace.wiring.admin_services import AdminServices
from terrace.wiring.audit_services import AuditServices
from terrace.wiring.embedded_adapters import EMBEDDED_BLOBS, EMBEDDED_DATABASE, EMBEDDED_KEY, EMBEDDED_SIGNING_KEYS
from terrace.wiring.hyok_services import HyokServices
from terrace.wiring.notification_services import NotificationServices
from terrace.wiring.page_services import PageServices
from terrace.wiring.policy_services import PolicyServices
from terrace.wiring.registry_services import RegistryServices
from terrace.wiring.run_services import RunServices
from terrace.wiring.runner_services import RunnerServices
from terrace.wiring.state_services import StateServices
from terrace.wiring.task_stage_services import TaskStageServices
from terrace.wiring.vcs_services import VcsServices
from terrace.wiring.workflow_services import WorkflowServices
from terrace.wiring.workspace_services import WorkspaceServices

__all__ = [
    "EMBEDDED_BLOBS",
    "EMBEDDED_DATABASE",
    "EMBEDDED_KEY",
    "EMBEDDED_SIGNING_KEYS",
    "Container",
    "aws_container",
    "build_aws",
    "build_embedded",
    "build_memory",
]


def _memory(module: str, name: str) -> Callable[[], Any]:
    """A default adapter: the in-memory twin `name` of `terrace.adapters.<module>`, imported when first made (the
    Lambdas give every one of them, and their cold starts load none)."""

    def make() -> Any:
        return getattr(importlib.import_module(f"terrace.adapters.{module}"), name)()

    return make


# The areas declare what they take from one another as plain attributes; here those are cached properties,
# which mypy calls a read-only property overriding a writable attribute (hence the ignore; types still checked).
@dataclass
class Container(  # type: ignore[override]
    AccessServices,
    AdminServices,
    WorkspaceServices,
    StateServices,
    RunServices,
    RunnerServices,
    TaskStageServices,
    NotificationServices,
    PolicyServices,
    RegistryServices,
    VcsServices,
    WorkflowServices,
    PageServices,
    AuditServices,
    HyokServices,
):
    """The adapters (these fields) and every service, built from them on first use by the areas mixed in:
    `AccessServices` (authz, accounts, organizations, teams, sign-in), `AdminServices` (site admin, tool versions),
    `WorkspaceServices` (workspaces, variables, SSH keys, locks, retention policies), `StateServices` (state
    versions, their index, events), `RunServices` (configuration versions, runs, scheduler, logs),
    `RunnerServices` (job queue, jobs, reaper, scaler) and `NotificationServices` (notification configurations,
    their delivery); and the use cases across them, `WorkflowServices` (workspace and organization deletion,
    purge, state rollback under lock, the retention sweep)."""

    settings: Settings
    table: Table
    blobs: BlobStore
    encryptor: Encryptor = field(default_factory=_memory("memory_encryptor", "MemoryEncryptor"))
    publisher: EventPublisher = field(default_factory=_memory("memory_events", "MemoryEventPublisher"))
    launcher: RunnerLauncher | None = None  # starts runners: ECS tasks on AWS, processes locally
    # checks a runner task's signed GetCallerIdentity with STS (AWS, with a runner task role); none embedded
    caller_identity: CallerIdentity | None = None
    scaler_kick: Callable[..., None] | None = None  # on AWS: wakes the scaler (kick(), or kick(expect=org))
    logs_warm_up: Callable[[], None] | None = None  # on AWS: readies an environment of the logs function
    event_queue: EventQueue | None = None  # the consumer side of `publisher` (SQS, or SQLite when embedded)
    database: Any = None  # the embedded server's SqliteDatabase (backups, closing)
    job_signal: JobSignal = field(default_factory=ConditionJobSignal)  # wakes waiting runners; in-process by default
    # the scaler's wake-up: the builders below make one event and give it to the job signal (set on every enqueue)
    # and to the scaler (`wiring/runner_services.py`), whose local loop (`local/workers.py`) sleeps on it
    scaler_wake: threading.Event = field(default_factory=threading.Event)
    # notifications, run tasks (memory: tests)
    outbound: Outbound = field(default_factory=_memory("memory_outbound", "MemoryOutbound"))
    mail: Mail = field(default_factory=_memory("memory_mail", "MemoryMail"))  # e-mails: SES on AWS, SMTP embedded
    # the REST calls to forges (VCS-driven runs): over httpx, under the outbound destination rules
    forge: Forge = field(default_factory=_memory("memory_forge", "MemoryForge"))
    # a commit with its submodules (`ingress-submodules`): git, where the host has it (None: such pushes start nothing)
    repository_clone: RepositoryClone | None = None
    github_app: GitHubApp | None = None  # the deployment's GitHub App, when configured (TERRACE_GITHUB_APP_*)
    # workload identity: SSM / a 0600 file
    signing_keys: SigningKeyStore = field(default_factory=_memory("memory_signing_keys", "MemorySigningKeys"))
    lanes: Lanes = field(default_factory=MemoryLanes)  # priority lanes: SQS on AWS, SQLite embedded
    # on AWS the policy function (`wiring/aws_adapters.py`); None: the engine's child process beside this one
    remote_policy_engine: PolicyEngine | None = None
    # on AWS the policy function parses uploaded HCL too; None: `ProcessHclReader`'s child beside this process
    remote_hcl_reader: HclReader | None = None
    # on AWS with TERRACE_AUDIT_LOG_GROUP: CloudWatch Logs, where the audit export also sends every event
    audit_log_sink: LogSink | None = None
    # Hold Your Own Key: customer keys in AWS KMS, in the embedded server's key file, in memory (unit tests)
    key_wrapper: KeyWrapper = field(default_factory=_memory("memory_key_wrapper", "MemoryKeyWrapper"))

    @functools.cached_property
    def outbound_allowance(self) -> Allowance:
        """Where, beyond public addresses, the server may send requests users configure."""
        return Allowance.parse(self.settings.outbound_allow)

    @functools.cached_property
    def ip_ranges(self) -> IPRanges:
        """The deployment's own addresses its operator configured (`GET /api/meta/ip-ranges`), as of now."""
        s = self.settings
        return ip_ranges.of_settings(
            s.ip_ranges_api, s.ip_ranges_notifications, s.ip_ranges_sentinel, s.ip_ranges_vcs, clock.utcnow()
        )

    def close(self) -> None:
        """Release what the adapters hold open (the embedded database's connections)."""
        if self.database is not None:
            self.database.close()


def _job_signal(wake: threading.Event, recheck_s: float | None = None) -> ConditionJobSignal:
    """The job signal, which sets the scaler's `wake` on every enqueue (the local scaler loop ticks at once)."""
    return ConditionJobSignal(recheck_s=recheck_s, observers=[lambda _organization: wake.set()])


def build_aws(settings: Settings, *, launcher: RunnerLauncher | None = None) -> Container:
    """Wiring against real AWS or the moto server (same code; endpoint_url decides). `launcher`: the runners'
    launcher when not ECS's (`terrace dev --moto` starts runner processes)."""
    from terrace.adapters.secrets import resolve_secrets
    from terrace.wiring.aws_adapters import connect

    tenant_identity.prepare()
    settings = resolve_secrets(settings)
    aws = connect(settings)
    wake = threading.Event()
    return Container(
        settings=settings,
        table=HeldReadsTable(aws.table),
        blobs=aws.blobs,
        encryptor=aws.encryptor,
        scaler_kick=aws.scaler_kick,
        logs_warm_up=aws.logs_warm_up,
        publisher=aws.events,
        event_queue=aws.events,
        launcher=launcher or aws.launcher,
        caller_identity=aws.caller_identity,
        job_signal=_job_signal(wake, recheck_s=LAMBDA_RECHECK_S),  # enqueues may happen in other Lambdas
        scaler_wake=wake,
        outbound=HttpxOutbound(Allowance.parse(settings.outbound_allow)),
        forge=shared.forges(Allowance.parse(settings.outbound_allow)),
        repository_clone=shared.repository_clone(Allowance.parse(settings.outbound_allow)),
        github_app=shared.github_app(settings),
        mail=aws.mail,
        signing_keys=aws.signing_keys,
        lanes=aws.lanes,
        remote_policy_engine=aws.policy_engine,
        remote_hcl_reader=aws.hcl_reader,
        audit_log_sink=aws.audit_logs,
        key_wrapper=shared.kms_key_wrapper(settings),
    )


def build_embedded(settings: Settings, *, launcher: RunnerLauncher | None = None) -> Container:
    """Wiring for one machine: everything in `settings.data_dir` (SQLite in WAL mode, a blob folder whose
    presigned-style URLs the app serves itself, AES-GCM envelope encryption). `launcher`: the runners' launcher
    (local processes, made by `terrace.local`); None: no runners (a tick of the scaler only reports demand)."""
    from terrace.wiring.embedded_adapters import open_data_dir, with_url_signing_secret

    tenant_identity.prepare()
    settings = with_url_signing_secret(settings)
    data = open_data_dir(settings)
    wake = threading.Event()
    return Container(
        settings=settings,
        table=HeldReadsTable(data.table),
        blobs=data.blobs,
        encryptor=data.encryptor,
        publisher=data.events,
        event_queue=data.events,
        database=data.database,
        launcher=launcher,
        job_signal=_job_signal(wake),
        scaler_wake=wake,
        outbound=HttpxOutbound(Allowance.parse(settings.outbound_allow)),
        forge=shared.forges(Allowance.parse(settings.outbound_allow)),
        repository_clone=shared.repository_clone(Allowance.parse(settings.outbound_allow)),
        github_app=shared.github_app(settings),
        mail=shared.smtp_mail(settings),
        signing_keys=data.signing_keys,
        lanes=data.lanes,
        key_wrapper=shared.file_key_wrapper(settings),
    )


@functools.cache
def aws_container() -> Container:
    """The process-wide container of a Lambda function, built from the environment on first use."""
    return build_aws(Settings.from_env())


def build_memory(settings: Settings | None = None) -> Container:
    """Wiring for unit tests: in-memory twins of every adapter."""
    from terrace.adapters.memory_blobs import MemoryBlobs
    from terrace.adapters.memory_table import MemoryTable

    settings = settings or Settings(table_name="memory", blob_bucket="memory", url_signing_secret="test-secret")
    wake = threading.Event()
    return Container(
        settings=settings,
        table=HeldReadsTable(MemoryTable()),
        blobs=MemoryBlobs(),
        job_signal=_job_signal(wake),
        scaler_wake=wake,
        github_app=shared.github_app(settings),  # none unless the test configures one (against the forge twin)
    )
