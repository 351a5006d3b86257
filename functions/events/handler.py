"""Lambda "events": batches from the events queue. Each record body is a JSON event handed to
container.events.handle (Terrace's own events, and the blob bucket's S3 notifications of landed state uploads,
which it finalizes); failed records are reported back so only they are retried. A notification delivery (up to
10 s on a slow receiver), or an event that says how long it may take (`needs_ms`: one policy set's OPA evaluation,
bounded by the engine's time limit), that would not fit in the invocation's remaining time goes back on the queue
as it is, so a batch of slow receivers or slow policies never times the function out."""

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
DELIVERY = "notification.delivery"  # services/notifications/delivery.py
DELIVERY_BUDGET_MS = 13_000  # its request's 10 s, and the time to record the answer
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
def record_handler(record: SQSRecord, lambda_context: Any = None) -> None:
    message = json.loads(record.body)
    if not isinstance(message, dict):
        raise ValueError(f"event {record.message_id} is not a JSON object")
    remaining = getattr(lambda_context, "get_remaining_time_in_millis", None)
    needs = DELIVERY_BUDGET_MS if message.get("type") == DELIVERY else message.get("needs_ms")
    if isinstance(needs, int) and remaining is not None and remaining() < needs:
        _get_container().publisher.publish(message)  # the next invocation handles it
        return
    _get_container().events.handle(message)
    count_run(message)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)
