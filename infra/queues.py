"""The SQS lanes runners drain (apply > plan > speculative), their dead-letter queue and the events queue.

Shapes come from terrace.adapters.definitions, the module local mode creates its moto queues from.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_sqs as sqs
from constructs import Construct
from terrace.adapters import definitions


def env_name(logical_name: str) -> str:
    """TERRACE_QUEUE_URL_<NAME>: the variable Settings.from_env reads a queue's URL from."""
    return "TERRACE_QUEUE_URL_" + logical_name.upper().replace("-", "_")


class Queues(Construct):
    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.by_name: dict[str, sqs.Queue] = {}
        # Dead-letter queues first, so the lanes can point at them.
        ordered = sorted(definitions.QUEUES, key=lambda q: q.dead_letter is not None)
        for spec in ordered:
            dead_letter = (
                sqs.DeadLetterQueue(queue=self.by_name[spec.dead_letter], max_receive_count=spec.max_receive_count)
                if spec.dead_letter
                else None
            )
            self.by_name[spec.logical_name] = sqs.Queue(
                self,
                _construct_id(spec.logical_name),
                visibility_timeout=Duration.seconds(spec.visibility_timeout_s),
                retention_period=Duration.seconds(spec.retention_s),
                dead_letter_queue=dead_letter,
                encryption=sqs.QueueEncryption.SQS_MANAGED,
                enforce_ssl=True,
            )

        self.lanes = [self.by_name[q.logical_name] for q in definitions.LANE_QUEUES]
        self.dead_letter = self.by_name[definitions.DEAD_LETTER_QUEUE.logical_name]
        self.events = self.by_name[definitions.EVENTS_QUEUE.logical_name]

        self.dlq_alarm = cloudwatch.Alarm(
            self,
            "DeadLetterDepthAlarm",
            alarm_description="Terrace: run phases failed every attempt and landed on the dead-letter queue",
            metric=self.dead_letter.metric_approximate_number_of_messages_visible(period=Duration.minutes(5)),
            threshold=0,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=1,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )

    def url_environment(self, *, lanes_only: bool = False) -> dict[str, str]:
        names = [q.logical_name for q in definitions.LANE_QUEUES] if lanes_only else list(self.by_name)
        return {env_name(name): self.by_name[name].queue_url for name in names}


def _construct_id(logical_name: str) -> str:
    return "".join(part.capitalize() for part in logical_name.split("-")) + "Queue"
