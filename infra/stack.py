"""The Terrace stack: the small constructs composed, their wiring (environment, grants) and the outputs."""

from __future__ import annotations

from aws_cdk import Aspects, Aws, CfnOutput, Fn, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from constructs import Construct
from terrace.adapters import definitions

from infra import least_privilege, nag, workload_identity
from infra.api import Api
from infra.data import Data
from infra.functions import METRICS, Functions
from infra.lambdas import LOG_RETENTION, Graviton, LogGroupsGoWithTheStack, terrace_layer
from infra.log_reads import LogReads
from infra.monitoring import Monitoring
from infra.origin_verify import ENV as ORIGIN_VERIFY_ENV
from infra.origin_verify import OriginVerify
from infra.queues import Queues
from infra.runner import Runner
from infra.secrets import Secrets
from infra.settings import DeploySettings
from infra.sign_in import SingleSignOn
from infra.web import Web


class TerraceStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, **kwargs: object) -> None:
        super().__init__(scope, construct_id, description="Terrace: serverless Terraform Cloud", **kwargs)
        settings = DeploySettings.from_context(self)

        data = Data(self, "Data", kms_key=settings.kms_key)
        queues = Queues(self, "Queues")
        notify_landed(data.blobs, queues.by_name)
        secrets = Secrets(self, "Secrets", data_key=not settings.kms_key)
        api = Api(self, "Api", settings=settings)
        origin_verify = OriginVerify(self, "OriginVerify", rotation=settings.rotate_secrets)
        web = Web(
            self,
            "Web",
            settings=settings,
            api_endpoint=api.http_api.api_endpoint,
            assets=data.assets,
            log_bucket=data.access_logs,
            origin_verify=origin_verify.value,
        )
        runner = Runner(
            self,
            "Runner",
            settings=settings,
            api_url=web.url,
        )
        environment = {
            "TERRACE_TABLE": data.table.table_name,
            "TERRACE_BLOB_BUCKET": data.blobs.bucket_name,
            "TERRACE_PUBLIC_URL": web.url,
            **({"TERRACE_KMS_KEY_ID": key_arn} if (key_arn := kms_key_arn(data, settings)) else {}),
            "TERRACE_MAX_RUNNERS": str(settings.max_runners),
            **queues.url_environment(),
            **secrets.environment(),
            **runner.environment(),
            **({"TERRACE_MAIL_FROM": settings.mail_from} if settings.mail_from else {}),
        }
        layer = terrace_layer(self, settings.skip_bundling)
        functions = Functions(
            self,
            "Functions",
            layer=layer,
            environment=environment,
            events_queue=queues.events,
            parameters=secrets.parameters,
            rotation=settings.rotate_secrets,
            monitoring=settings.monitoring,
        )
        sso = SingleSignOn(self, "SingleSignOn", settings=settings, public_url=web.url)
        log_reads = (
            LogReads(self, "LogReads", layer=layer, environment=environment, data=data, secrets=secrets,
                     settings=settings)
            if settings.log_reads_direct
            else None
        )  # fmt: skip
        api_fn = api.add_handler(
            layer=layer,
            environment={
                **environment,
                **sso.environment(),
                "TERRACE_SCALER_FUNCTION": functions.scaler.function_name,
                "TERRACE_POLICY_FUNCTION": functions.policy.function_name,
                "TERRACE_LOG_READ_WAIT_S": "0",  # a log read answers with what there is: the CLI polls again
                **({"TERRACE_LOG_READ_URL": log_reads.url} if log_reads else {}),  # the CLI reads logs there
                ORIGIN_VERIFY_ENV: origin_verify.value,
            },
            tracing=settings.tracing,
            metrics=METRICS["api"] if settings.monitoring else (),
        )
        sso.grant_read(api_fn)
        workload_identity.grant_signing_keys(self, api_fn)  # dynamic provider credentials: SSM SecureString keys

        # Grants: each function gets what its job needs.
        every = [api_fn, *functions.all]
        # a rotated URL-signing key is in SSM before the functions' new code starts: no new container reads the old
        for fn in (api_fn, functions.scaler, functions.reaper, functions.events, *readers(log_reads)):
            fn.node.add_dependency(functions.bootstrap_admin)
        for fn in every:
            data.table.grant_read_write_data(fn)
            secrets.grant_read(fn, "signing-key")
        for fn in (api_fn, functions.reaper, functions.events, functions.bootstrap):
            secrets.grant_read(fn, "data-key")
            grant_sealing(fn, data, settings)
        for fn in (api_fn, functions.reaper, functions.events):
            least_privilege.grant_blobs(data.blobs, fn)
            queues.events.grant_send_messages(fn)
        data.table.grant_read_write_data(functions.tools_sync)  # the catalog's records only: no secret, bucket, queue
        if settings.audit_logs:  # the reaper's audit export also sends every event there (services/audit/export.py)
            # kept as every log group of the stack (a month, deleted with it): a live feed for alarms and queries;
            # the record kept for TERRACE_AUDIT_RETENTION_DAYS is the bucket's daily objects
            audit_logs = logs.LogGroup(self, "AuditLogs", retention=LOG_RETENTION, removal_policy=RemovalPolicy.DESTROY)
            functions.reaper.add_environment("TERRACE_AUDIT_LOG_GROUP", audit_logs.log_group_name)
            audit_logs.grant_write(functions.reaper)
        secrets.grant_bootstrap(functions.bootstrap)
        # the priority lanes: sent to wherever a run phase becomes runnable, drained by the scaler (the dispatcher)
        for lane in queues.lanes:
            for fn in (api_fn, functions.reaper, functions.events):
                lane.grant_send_messages(fn)
            lane.grant_consume_messages(functions.scaler)
        runner.grant_run_task(functions.scaler)
        runner.grant_stop_tasks(functions.bootstrap)  # the teardown custom resource
        # deletion order: the scaler (and what invokes it) first, then the teardown stops the tasks, then the cluster
        functions.runner_teardown.node.add_dependency(runner.cluster)
        functions.scaler.node.add_dependency(functions.runner_teardown)
        functions.scaler.grant_invoke(api_fn)
        if log_reads is not None:  # the warm window's warm-up of the logs function (functions/logs: WARM_UP), sent by
            # the scaler invocation that takes an organization's wake (warm_window.py: take_wakes): the CLI's first read
            # finds it started
            functions.scaler.add_environment("TERRACE_LOGS_FUNCTION", log_reads.function.function_name)
            functions.scaler.add_to_role_policy(  # its unqualified ARN only: no version, no wildcard
                iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[log_reads.function.function_arn])
            )
        # the events function queues the runs run triggers start (services/workflows/run_trigger_fanout.py): it wakes
        # the scaler as the api does, rather than leaving the run to the scaler's next minute
        # and so does the reaper when it resends a queued phase whose lane message was lost (`kicking_lanes.py`)
        for fn in (functions.events, functions.reaper):
            fn.add_environment("TERRACE_SCALER_FUNCTION", functions.scaler.function_name)
            functions.scaler.grant_invoke(fn)
        functions.wake_scaler_when_runners_stop(runner.cluster.cluster_arn)
        # tenants' Rego runs in the policy function, never beside these functions' credentials: the events function
        # evaluates runs' policy sets there, the api compiles uploaded policies there; invoking it is all they may do
        functions.events.add_environment("TERRACE_POLICY_FUNCTION", functions.policy.function_name)
        for fn in (api_fn, functions.events):
            functions.policy.grant_invoke(fn)
        if settings.mail_from:  # notification e-mails: verifications (api) and deliveries (events)
            domain = settings.mail_from.rsplit("@", 1)[-1]
            identities = [f"arn:{Aws.PARTITION}:ses:{Aws.REGION}:{Aws.ACCOUNT_ID}:identity/{name}"
                          for name in (settings.mail_from, domain)]  # fmt: skip
            for fn in (api_fn, functions.events):
                fn.add_to_role_policy(iam.PolicyStatement(actions=["ses:SendEmail"], resources=identities))

        self.monitoring = Monitoring(
            self,
            "Monitoring",
            enabled=settings.monitoring,
            http_api=api.http_api,
            functions={
                "api": api_fn,
                "scaler": functions.scaler,
                "reaper": functions.reaper,
                "events": functions.events,
                "tools_sync": functions.tools_sync,
                **({"logs": log_reads.function} if log_reads else {}),  # the CLI's log reads
            },
            queues=queues.by_name,
            extra_alarms=[],
            alarm_email=settings.alarm_email,
            runner_logs=runner.log_group,
            api_logs=api_fn.log_group,
        )

        CfnOutput(self, "Url", value=web.url, description="Terrace URL (UI, API, http backend)")
        CfnOutput(self, "Hostname", value=web.hostname, description="hostname for the tofu/terraform cloud block")
        CfnOutput(
            self,
            "AdminTokenParameter",
            value=secrets.admin_token_name,
            description="SSM SecureString parameter holding the site admin's API token",
        )
        CfnOutput(
            self,
            "CliSnippet",
            description="shell: give tofu/terraform the site admin's token for this host",
            value=Fn.join(
                "",
                [
                    "export TF_TOKEN_",
                    Fn.join("_", Fn.split(".", web.hostname)),
                    "=$(aws ssm get-parameter --with-decryption --name ",
                    secrets.admin_token_name,
                    " --query Parameter.Value --output text)",
                ],
            ),
        )
        if self.monitoring.dashboard is not None:
            CfnOutput(self, "DashboardName", value=self.monitoring.dashboard.dashboard_name)

        self.api_function: lambda_.Function = api_fn
        self.functions = functions
        self.runner = runner
        self.data = data
        self.queues = queues
        self.web = web
        Aspects.of(self).add(Graviton())
        Aspects.of(self).add(LogGroupsGoWithTheStack())
        nag.acknowledge(self, nag.GENERAL)
        if not settings.domain_name:
            nag.acknowledge(self, nag.DEFAULT_DOMAIN)
        nag.acknowledge(
            self,
            nag.granular_findings(
                table=data.table,
                blobs=data.blobs,
                scaler=functions.scaler,
                policy=functions.policy,
                cluster=runner.cluster,
                assets=data.assets,
            ),
        )


def readers(log_reads: LogReads | None) -> list[lambda_.Function]:
    return [log_reads.function] if log_reads is not None else []


def kms_key_arn(data: Data, settings: DeploySettings) -> str | None:
    """The KMS key the functions seal with (`terrace:kmsKey`) or open older values with (`terrace:legacyKmsKeyArn`)."""
    return data.key.key_arn if data.key is not None else settings.legacy_kms_key_arn


def grant_sealing(fn: lambda_.Function, data: Data, settings: DeploySettings) -> None:
    if data.key is not None:
        data.key.grant_encrypt_decrypt(fn)
    elif settings.legacy_kms_key_arn:  # only opens what an older stack sealed
        fn.add_to_role_policy(iam.PolicyStatement(actions=["kms:Decrypt"], resources=[settings.legacy_kms_key_arn]))


def notify_landed(blobs: s3.Bucket, queues: dict[str, sqs.Queue]) -> None:
    """The blob bucket's event notifications (`definitions.NOTIFICATIONS`: a landed state upload or configuration
    archive is finalized by the events function), set on the bucket itself (no notifications custom resource). S3
    may send to the queue from this account; the bucket waits for that policy, as S3 checks the destination when it
    is configured."""
    cfn = blobs.node.default_child
    assert isinstance(cfn, s3.CfnBucket)
    configurations = []
    for spec in definitions.NOTIFICATIONS:
        queue = queues[spec.queue]
        granted = queue.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ServicePrincipal("s3.amazonaws.com")],
                actions=["sqs:SendMessage"],
                resources=[queue.queue_arn],
                conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}},
            )
        )
        assert granted.policy_dependable is not None
        cfn.node.add_dependency(granted.policy_dependable)
        rule = s3.CfnBucket.FilterRuleProperty(name="prefix", value=spec.prefix)
        configurations.append(
            s3.CfnBucket.QueueConfigurationProperty(
                event="s3:ObjectCreated:*",
                queue=queue.queue_arn,
                filter=s3.CfnBucket.NotificationFilterProperty(s3_key=s3.CfnBucket.S3KeyFilterProperty(rules=[rule])),
            )
        )
    cfn.notification_configuration = s3.CfnBucket.NotificationConfigurationProperty(queue_configurations=configurations)
