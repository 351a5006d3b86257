"""Lambda "api": the FastAPI app behind the HTTP API, through Mangum. Built once per container."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer

logger = Logger()
metrics = Metrics()
tracer = Tracer()  # disabled by POWERTOOLS_TRACE_DISABLED (local runs and tests)

_handler: Any = None


def _mangum() -> Any:
    global _handler
    if _handler is None:
        from mangum import Mangum
        from terrace.bootstrap import aws_container
        from terrace.web.app import create_app

        _handler = Mangum(create_app(aws_container()), lifespan="off")
    return _handler


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
@tracer.capture_lambda_handler(capture_response=False)
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    response: dict[str, Any] = _mangum()(event, context)
    return response
