"""The background functions: scaler (woken by every message sent to a lane and by every runner task that stops; every 5
minutes as a backstop) and reaper (every minute), tools_sync (daily: the tool catalog from the release mirrors),
events (SQS batches), the bootstrap custom resource that makes the
stack's secrets and the site admin, and the teardown custom resource (the same function) that stops runner tasks
before the cluster is deleted; and the policy function, which evaluates tenants' Rego for the events and api
functions under a role of its own that may only write its logs (no table, bucket, queue, parameter or key; no
Terrace setting in its environment)."""

from __future__ import annotations

from aws_cdk import CustomResource, Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.lambdas import terrace_function
from infra.secrets import SIGNING_KEY_GENERATION

SCHEDULES = {  # the scaler is woken on every enqueue: its schedule only catches a lost wake-up and warm runners
    "scaler": events.Schedule.rate(Duration.minutes(5)),
    "reaper": events.Schedule.rate(Duration.minutes(1)),  # heartbeats and deadlines
    "tools_sync": events.Schedule.rate(Duration.days(1)),  # the tool catalog from the release mirrors' indexes
}
# settings the tools_sync function has no use for: no secret is read where a mirror's answer is parsed
UNSECRETED = ("TERRACE_URL_SIGNING_SECRET_ARN", "TERRACE_DATA_KEY_ARN", "TERRACE_OIDC_CLIENT_SECRET_ARN",
              "TERRACE_BOOTSTRAP_SECRET_ARN")  # fmt: skip
# Custom metrics each handler publishes (functions/<name>/handler.py; tests/infra checks the two agree).
METRICS = {
    "api": ("AuditWriteFailures",),  # audit events the recorder could not write (alarmed: infra/monitoring.py)
    "scaler": ("RunnersStarted", "Backlog", "BacklogBlocked", "RunTaskFailures"),
    "events": ("RunsStarted", "RunsFinished", "RunsErrored"),
}


class Functions(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        layer: lambda_.ILayerVersion,
        environment: dict[str, str],
        events_queue: sqs.IQueue,
        parameters: dict[str, str],
        rotation: str,
        monitoring: bool,
    ) -> None:
        super().__init__(scope, construct_id)

        def function(name: str, timeout_s: int, memory_mb: int = 512) -> lambda_.Function:
            return terrace_function(
                self,
                name.capitalize(),
                folder=name,
                layer=layer,
                environment=environment,
                timeout=Duration.seconds(timeout_s),
                memory_mb=memory_mb,
                metrics=METRICS.get(name, ()) if monitoring else (),
            )

        self.scaler = function("scaler", 50)
        self.reaper = function("reaper", 50)
        # below the events queue's visibility timeout; room for an OPA evaluation's child process (512 MiB at most)
        self.events = function("events", 30, memory_mb=1024)
        self.bootstrap = function("bootstrap", 300)  # the teardown waits for runner tasks to stop
        self.policy = policy_function(self, layer)
        # the scaler never decrypts a sensitive value: it does not read the data key
        self.scaler.add_environment("TERRACE_DATA_KEY_ARN", "")
        # `terrace tools sync` daily: reads the mirrors' indexes, writes catalog records (the table, nothing else)
        self.tools_sync = terrace_function(
            self,
            "ToolsSync",
            folder="tools_sync",
            layer=layer,
            environment={**environment, **dict.fromkeys(UNSECRETED, "")},
            timeout=Duration.seconds(120),  # two indexes of up to 64 MiB, 60 s a step
        )
        events.Rule(
            self,
            "ToolsSyncSchedule",
            schedule=SCHEDULES["tools_sync"],
            targets=[targets.LambdaFunction(self.tools_sync, retry_attempts=2)],
        )

        for fn, rule_id in ((self.scaler, "ScalerSchedule"), (self.reaper, "ReaperSchedule")):
            schedule = SCHEDULES[rule_id.removesuffix("Schedule").lower()]
            events.Rule(self, rule_id, schedule=schedule, targets=[targets.LambdaFunction(fn, retry_attempts=0)])

        self.events.add_event_source(
            sources.SqsEventSource(events_queue, batch_size=10, report_batch_item_failures=True)
        )

        self.bootstrap_admin = CustomResource(
            self,
            "BootstrapAdmin",
            service_token=self.bootstrap.function_arn,
            resource_type="Custom::TerraceBootstrapAdmin",
            properties={
                "Username": "admin",
                "SecretArn": environment["TERRACE_BOOTSTRAP_SECRET_ARN"],
                "Parameters": parameters,
                "Rotation": rotation,
                "SigningKeyGeneration": SIGNING_KEY_GENERATION,
            },
        )
        self.runner_teardown = CustomResource(
            self,
            "RunnerTeardown",
            service_token=self.bootstrap.function_arn,
            resource_type="Custom::TerraceRunnerTasks",
            properties={"Cluster": environment["TERRACE_ECS_CLUSTER"]},
        )

    def wake_scaler_when_runners_stop(self, cluster_arn: str) -> None:
        """A runner task that stops (idle, retired, handed its slot over, or interrupted on Spot) frees its slot:
        the scaler ticks at once for the phases that waited for room, not at its next schedule."""
        stopped = events.EventPattern(
            source=["aws.ecs"],
            detail_type=["ECS Task State Change"],
            detail={"clusterArn": [cluster_arn], "lastStatus": ["STOPPED"]},
        )
        target = targets.LambdaFunction(self.scaler, retry_attempts=0)
        events.Rule(self, "RunnerStopped", event_pattern=stopped, targets=[target])

    @property
    def background(self) -> dict[str, lambda_.Function]:
        return {"scaler": self.scaler, "reaper": self.reaper, "events": self.events}

    @property
    def all(self) -> list[lambda_.Function]:
        """The functions that serve Terrace (the stack grants them its resources); not the policy function."""
        return [self.scaler, self.reaper, self.events, self.bootstrap]


POLICY_TIMEOUT_S = 30  # the engine's limit is 20 s at most (`wiring/policy_function.py`), plus the start around it


def policy_function(scope: Construct, layer: lambda_.ILayerVersion) -> lambda_.Function:
    """The policy function (`functions/policy/handler.py`): the terrace layer (regopy's arm64 wheel in it), no
    environment but the runtime's, and a role whose only statement writes its own log group."""
    role = iam.Role(
        scope,
        "PolicyRole",
        assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
        description="Terrace policy function: writes its own logs, nothing else",
    )
    fn = terrace_function(
        scope,
        "Policy",
        folder="policy",
        layer=layer,
        environment={},
        timeout=Duration.seconds(POLICY_TIMEOUT_S),
        memory_mb=1024,  # the engine's child (768 MiB at most) beside the handler's Python
        tracing=None,  # not even X-Ray's two actions
        role=role,
    )
    role.add_to_policy(
        iam.PolicyStatement(
            actions=["logs:CreateLogStream", "logs:PutLogEvents"], resources=[fn.log_group.log_group_arn]
        )
    )
    return fn
