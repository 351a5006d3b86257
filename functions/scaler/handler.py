"""Lambda "scaler", the dispatcher of the priority lanes: on demand (the api invokes it after enqueueing a job, and
with `{"expect": <organization key>}` when a configuration version is created, before its run exists, and with
`{"warm": <organization key>}` when a workspace is opened: its warm window, once a minute per API instance; the
tick happens only in the invocation that takes the organization's wake claim, once a minute in the deployment:
`Scaler.scale_once`) and every 5
minutes (EventBridge: a backstop for a lost wake-up), starts Fargate runners for the lanes' backlog in priority
order (`services/runs/scaler.py`).

Metrics (namespace `POWERTOOLS_METRICS_NAMESPACE`): `RunnersStarted`, `Backlog` (phases waiting on the lanes),
`BacklogBlocked` (of those, left waiting for want of room) and `RunTaskFailures` (launches that failed after their
retries): alarm on the last one, and on the lane queues' `ApproximateAgeOfOldestMessage`."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from terrace.bootstrap import aws_container

logger = Logger()
metrics = Metrics()
tracer = Tracer()

_get_container = aws_container  # built once per execution environment


def _count(value: Any) -> int:
    """A count of the summary: a number, or a per-organization mapping of numbers (`started`)."""
    if isinstance(value, dict):
        return sum(int(v) for v in value.values())
    return int(value or 0)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    expect = event.get("expect") if isinstance(event, dict) else None
    speculative = isinstance(event, dict) and event.get("speculative") is True
    warm = event.get("warm") if isinstance(event, dict) else None  # a workspace opened: its warm window
    summary: dict[str, Any] = _get_container().scaler.scale_once(
        expect=[expect] if isinstance(expect, str) else [],
        speculative=speculative,
        warm=[warm] if isinstance(warm, str) else [],
    )
    # only non-zero values: a metric published every tick costs $0.30 a month even while nothing happens
    for name, key in (
        ("RunnersStarted", "started"),
        ("Backlog", "backlog"),
        ("BacklogBlocked", "blocked"),
        ("RunTaskFailures", "launch_failures"),
    ):
        if value := _count(summary.get(key)):
            metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)
    logger.info("scaled", extra={"summary": summary})
    return summary
