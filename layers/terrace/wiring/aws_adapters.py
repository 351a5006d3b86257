"""The AWS adapters: DynamoDB table, S3 blobs, KMS encryption, the SQS events queue, ECS runners and the scaler
Lambda's kick. Real AWS or the moto server: only the endpoint (`settings.aws_endpoint_url`) differs.

Imported by `bootstrap.build_aws` when it runs, so boto3 stays out of the embedded server and the unit tests."""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.config import Config

from terrace.adapters import boto_session
from terrace.adapters.cloudwatch_log_sink import CloudWatchLogSink
from terrace.adapters.data_key_encryptor import DataKeyEncryptor, decode_key
from terrace.adapters.definitions import LANE_QUEUES
from terrace.adapters.dynamo_table import DynamoTable
from terrace.adapters.ecs_runner_launcher import EcsLauncher
from terrace.adapters.encryptor import Encryptor
from terrace.adapters.hcl_reader import HclReader
from terrace.adapters.kicking_lanes import KickingLanes
from terrace.adapters.kms_encryptor import KmsEncryptor
from terrace.adapters.lambda_hcl_reader import LambdaHclReader
from terrace.adapters.lambda_policy_engine import LambdaPolicyEngine
from terrace.adapters.lanes import Lanes
from terrace.adapters.memory_lanes import MemoryLanes
from terrace.adapters.policy_engine import PolicyEngine
from terrace.adapters.s3_blobs import S3Blobs
from terrace.adapters.ses_mail import SesMail
from terrace.adapters.sqs_events import SqsEventPublisher
from terrace.adapters.sqs_lanes import SqsLanes
from terrace.adapters.ssm_signing_keys import SsmSigningKeys
from terrace.adapters.sts_caller_identity import StsCallerIdentity
from terrace.config import Settings


@dataclass
class AwsAdapters:
    table: DynamoTable
    blobs: S3Blobs
    encryptor: Encryptor  # the SSM-held data key (KMS only for values sealed before), or KMS
    events: SqsEventPublisher  # publishes to the events queue and consumes it
    launcher: EcsLauncher | None  # runners as ECS tasks, when a cluster and a task definition are configured
    scaler_kick: Callable[..., None] | None  # wakes the scaler Lambda, when one is configured
    logs_warm_up: Callable[[], None] | None  # starts an environment of the logs function, when one is configured
    mail: SesMail  # notification e-mails
    signing_keys: SsmSigningKeys  # workload identity keys, SSM SecureString parameters
    lanes: Lanes  # the priority lanes (SQS; in memory when no lane queue is configured: one process only)
    caller_identity: StsCallerIdentity | None  # a runner task's proof of its identity, with a runner task role
    policy_engine: PolicyEngine | None  # the policy function, when one is configured (else the local child)
    hcl_reader: HclReader | None  # uploaded HCL parsed in the policy function too, when one is configured
    audit_logs: CloudWatchLogSink | None  # the audit export's copy in CloudWatch Logs, when a group is configured


def sts_endpoint(settings: Settings) -> str:
    """The STS endpoint runner proofs are checked with: the configured one, else the region's."""
    return settings.sts_endpoint or f"https://sts.{settings.region}.amazonaws.com/"


def connect(settings: Settings) -> AwsAdapters:
    """The adapters over one set of boto3 clients (`settings` with its secrets resolved)."""
    clients = boto_clients(settings)
    kick = None
    if settings.scaler_function:
        kick = functools.partial(invoke_scaler, settings, settings.scaler_function)
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
            spot_lanes=settings.runner_spot_lanes,
        )
    return AwsAdapters(
        table=DynamoTable(clients["dynamodb"], settings.table_name),
        blobs=S3Blobs(clients["s3"], settings.blob_bucket),
        encryptor=encryptor(settings, clients),
        events=SqsEventPublisher(clients["sqs"], settings.queue_urls.get("events", "")),
        launcher=launcher,
        scaler_kick=kick,
        logs_warm_up=functools.partial(warm_up, settings, settings.logs_function) if settings.logs_function else None,
        mail=SesMail(clients["ses"], settings.mail_from),
        signing_keys=SsmSigningKeys(clients["ssm"], settings.workload_identity_keys_path),
        lanes=lanes(clients["sqs"], settings, kick),
        caller_identity=StsCallerIdentity(sts_endpoint(settings)) if settings.runner_task_role_arn else None,
        policy_engine=policy_engine(settings),
        hcl_reader=hcl_reader(settings),
        audit_logs=CloudWatchLogSink(clients["logs"], settings.audit_log_group) if settings.audit_log_group else None,
    )


POLICY_INVOKE_MARGIN_S = 15  # the function's start and its answer, beyond the engine's own time limit


def policy_engine(settings: Settings) -> PolicyEngine | None:
    """The policy function (`settings.policy_function`) invoked synchronously, once: a retry would double an
    evaluation's time; a failed invocation is that evaluation's error (`adapters/lambda_policy_engine.py`)."""
    if not settings.policy_function:
        return None
    session = boto_session.session(settings.region)
    config = Config(
        connect_timeout=5,
        read_timeout=settings.policy_timeout_s + POLICY_INVOKE_MARGIN_S,
        retries={"total_max_attempts": 1, "mode": "standard"},
    )
    common: dict[str, Any] = {"endpoint_url": settings.aws_endpoint_url} if settings.aws_endpoint_url else {}
    return LambdaPolicyEngine(
        LazyClient(session, "lambda", config=config, **common),
        settings.policy_function,
        timeout_s=settings.policy_timeout_s,
        memory_mb=settings.policy_memory_mb,
    )


HCL_TIMEOUT_S = 12.0  # `LambdaHclReader`'s (and `ProcessHclReader`'s) wall-clock limit of one upload's parse


def hcl_reader(settings: Settings) -> HclReader | None:
    """Uploaded HCL parsed in the policy function (`settings.policy_function`), invoked once as for Rego: the api
    and events functions, whose role holds the table, the bucket and the queues, never parse it themselves."""
    if not settings.policy_function:
        return None
    session = boto_session.session(settings.region)
    config = Config(
        connect_timeout=5,
        read_timeout=HCL_TIMEOUT_S + POLICY_INVOKE_MARGIN_S,
        retries={"total_max_attempts": 1, "mode": "standard"},
    )
    common: dict[str, Any] = {"endpoint_url": settings.aws_endpoint_url} if settings.aws_endpoint_url else {}
    client = LazyClient(session, "lambda", config=config, **common)
    return LambdaHclReader(client, settings.policy_function, timeout_s=HCL_TIMEOUT_S)


def encryptor(settings: Settings, clients: dict[str, Any]) -> Encryptor:
    """The data key when the deployment has one (the default stack), KMS otherwise (local mode, `terrace:kmsKey`)."""
    kms = KmsEncryptor(clients["kms"], settings.kms_key_id) if settings.kms_key_id else None
    if settings.data_key:
        return DataKeyEncryptor(decode_key(settings.data_key), legacy=kms)
    return kms or KmsEncryptor(clients["kms"], "alias/terrace")


class LazyClient:
    """A boto3 client made on its first use: a cold start pays only for the services its request calls (each
    client loads its service model, ~40 ms), not for all seven."""

    def __init__(self, session: boto3.session.Session, service: str, **kwargs: Any) -> None:
        self._session, self._service, self._kwargs = session, service, kwargs
        self._client: Any = None
        self._lock = threading.Lock()  # a boto3 session makes clients one thread at a time

    def __getattr__(self, name: str) -> Any:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    self._client = self._session.client(self._service, **self._kwargs)
        return getattr(self._client, name)


def lanes(sqs: Any, settings: Settings, kick: Callable[[], None] | None = None) -> Lanes:
    """The SQS lanes of `definitions.LANE_QUEUES` (and their dead letters), when their URLs are configured; with
    `kick`, every message sent wakes the scaler."""
    names = [q.logical_name for q in LANE_QUEUES] + [q.dead_letter for q in LANE_QUEUES if q.dead_letter]
    found: Lanes = MemoryLanes()
    if all(settings.queue_urls.get(name) for name in names):
        found = SqsLanes(sqs, {name: settings.queue_urls[name] for name in names})
    return KickingLanes(found, kick) if kick is not None else found


def boto_clients(settings: Settings) -> dict[str, Any]:
    """boto3 clients, one per process each (cold start matters on Lambda), created on first use."""
    session = boto_session.session(settings.region)  # its botocore reads the pruned endpoints file
    common: dict[str, Any] = {"endpoint_url": settings.aws_endpoint_url} if settings.aws_endpoint_url else {}
    s3_config = Config(signature_version="s3v4", s3={"addressing_style": "path"})
    retry = Config(retries={"max_attempts": 5, "mode": "adaptive"})
    return {
        "dynamodb": LazyClient(session, "dynamodb", config=retry, **common),
        "s3": LazyClient(session, "s3", config=s3_config, **common),
        "sqs": LazyClient(session, "sqs", config=retry, **common),
        "kms": LazyClient(session, "kms", config=retry, **common),
        "ecs": LazyClient(session, "ecs", config=retry, **common),
        "ses": LazyClient(session, "ses", config=retry, **common),
        "ssm": LazyClient(session, "ssm", config=retry, **common),
        "logs": LazyClient(session, "logs", config=retry, **common),
    }


def invoke_scaler(
    settings: Settings,
    function_name: str,
    expect: str | None = None,
    speculative: bool = False,
    warm: str | None = None,
) -> None:
    """Invoke the scaler without waiting; `expect`: the organization a configuration version was created in
    (`speculative`: a speculative one, whose runner is one of the speculative lane); `warm`: the organization a
    workspace of was opened (its warm window opens)."""
    client = boto_session.session(settings.region).client("lambda", endpoint_url=settings.aws_endpoint_url)
    payload: dict[str, Any] = {"expect": expect, **({"speculative": True} if speculative else {})} if expect else {}
    payload.update({"warm": warm} if warm else {})
    client.invoke(FunctionName=function_name, InvocationType="Event", Payload=json.dumps(payload).encode())


def warm_up(settings: Settings, function_name: str) -> None:
    """Invoke a function without waiting, with the event it answers by building its container and nothing else
    (`functions/logs/handler.py`: `WARM_UP`), so its next request finds an environment ready."""
    client = boto_session.session(settings.region).client("lambda", endpoint_url=settings.aws_endpoint_url)
    client.invoke(FunctionName=function_name, InvocationType="Event", Payload=b'{"warm-up": true}')
