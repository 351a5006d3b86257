"""The background functions: scaler and reaper (every minute), events (SQS batches), and the bootstrap
custom resource that creates the site admin and its token on first deploy."""

from __future__ import annotations

from aws_cdk import CustomResource, Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.lambdas import terrace_function

EVERY_MINUTE = events.Schedule.rate(Duration.minutes(1))


class Functions(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        layer: lambda_.ILayerVersion,
        environment: dict[str, str],
        events_queue: sqs.IQueue,
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
            )

        self.scaler = function("scaler", 50)
        self.reaper = function("reaper", 50)
        # below the events queue's visibility timeout; room for an OPA evaluation's child process (512 MiB at most)
        self.events = function("events", 30, memory_mb=1024)
        self.bootstrap = function("bootstrap", 60)

        for fn, rule_id in ((self.scaler, "ScalerSchedule"), (self.reaper, "ReaperSchedule")):
            events.Rule(self, rule_id, schedule=EVERY_MINUTE, targets=[targets.LambdaFunction(fn, retry_attempts=0)])

        self.events.add_event_source(
            sources.SqsEventSource(events_queue, batch_size=10, report_batch_item_failures=True)
        )

        self.bootstrap_admin = CustomResource(
            self,
            "BootstrapAdmin",
            service_token=self.bootstrap.function_arn,
            resource_type="Custom::TerraceBootstrapAdmin",
            properties={"Username": "admin", "SecretArn": environment["TERRACE_BOOTSTRAP_SECRET_ARN"]},
        )

    @property
    def background(self) -> dict[str, lambda_.Function]:
        return {"scaler": self.scaler, "reaper": self.reaper, "events": self.events}

    @property
    def all(self) -> list[lambda_.Function]:
        return [self.scaler, self.reaper, self.events, self.bootstrap]
