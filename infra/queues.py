"""The events queue (run transitions, state uploads) consumed by the events function, and the three priority lanes
(apply, plan, speculative, each with its dead-letter queue) on which every runnable run phase goes to the scaler,
which drains them in order and starts runners (`services/runs/scaler.py`). Runners never read SQS: they claim their
organization's jobs through the API.

Shapes come from terrace.adapters.definitions, the module local mode creates its moto queues from.
"""

from __future__ import annotations

from aws_cdk import Duration
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
        # Dead-letter queues (if any) first, so the others can point at them.
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

        self.events = self.by_name[definitions.EVENTS_QUEUE.logical_name]
        self.lanes = [self.by_name[spec.logical_name] for spec in definitions.LANE_QUEUES]

    def url_environment(self) -> dict[str, str]:
        return {env_name(name): queue.queue_url for name, queue in self.by_name.items()}


def _construct_id(logical_name: str) -> str:
    return "".join(part.capitalize() for part in logical_name.split("-")) + "Queue"
