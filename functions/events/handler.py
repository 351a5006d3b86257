"""Lambda "events": batches from the events queue. Each record body is a JSON event handed to
container.events.handle (Terrace's own events, and the blob bucket's S3 notifications of landed state uploads,
which it finalizes); failed records are reported back so only they are retried."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from terrace.bootstrap import aws_container

logger = Logger()
metrics = Metrics()
tracer = Tracer()
processor = BatchProcessor(event_type=EventType.SQS)

_get_container = aws_container  # built once per execution environment
FINAL = {"applied", "planned_and_finished", "discarded", "errored", "canceled", "force_canceled"}


def count_run(message: dict[str, Any]) -> None:
    """The dashboard's run metrics, from run transitions."""
    if message.get("type") != "run.status_changed":
        return
    status = message.get("to")
    if status == "planning" and message.get("from") == "plan_queued":
        metrics.add_metric(name="RunsStarted", unit=MetricUnit.Count, value=1)
    if status in FINAL:
        metrics.add_metric(name="RunsFinished", unit=MetricUnit.Count, value=1)
    if status == "errored":
        metrics.add_metric(name="RunsErrored", unit=MetricUnit.Count, value=1)


@tracer.capture_method
def record_handler(record: SQSRecord) -> None:
    message = json.loads(record.body)
    if not isinstance(message, dict):
        raise ValueError(f"event {record.message_id} is not a JSON object")
    _get_container().events.handle(message)
    count_run(message)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)
