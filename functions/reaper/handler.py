"""Lambda "reaper": every minute (EventBridge), fails or retries runs whose heartbeats or deadlines passed."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from terrace.bootstrap import aws_container

logger = Logger()
metrics = Metrics()
tracer = Tracer()

_get_container = aws_container  # built once per execution environment


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    summary: dict[str, Any] = _get_container().reaper.reap_once()
    logger.info("reaped", extra={"summary": summary})
    return summary
