"""Lambda "api": the FastAPI app behind the HTTP API, through Mangum. Built once per container.

The cold start is kept near that of importing FastAPI, Mangum, boto3 and pydantic alone (`python -m bench --only
cold_start`): nothing is built at import, the app on the first request (each API router, the UI's and the site
admin API's routes on the first request under their URL prefixes: `web/api_routes.py`), the X-Ray SDK (~0.4 s of
imports and a sampling client) only when `TERRACE_XRAY_SDK=true` asks for subsegments of each AWS call. Lambda's
active tracing records every sampled invocation's segment (and its initialization) without it. Powertools' Logger
(~35 ms of imports) only when `POWERTOOLS_LOGGER_LOG_EVENT` asks it to log each event: nothing else logs through
it here (the app's modules log through the standard `logging` loggers, which Lambda's runtime prints).

On Lambda the cyclic garbage collector is off from this module's import to the end of the first invocation: a
cold start allocates ~80,000 long-lived objects (modules, classes, functions, the app) and little cyclic garbage,
and the collector would scan them ~180 times (~140 in the imports of FastAPI, Mangum, boto3 and pydantic, ~40 in
what Terrace adds; `python -m bench --only cold_start` prints the baseline's share). After that invocation, answered
or failed, what the cold start built is frozen (`gc.freeze`: never scanned again, so later collections stay as
short as a warm request's garbage) and the collector is on again.

After each invocation the audit recorder's count of events it could not write (`services/audit/recorder.py`) is
compared with what this environment last published; a rise is published as the custom metric `AuditWriteFailures`
through Powertools Metrics (EMF in the function's log, imported only then) and alarmed on
(`infra/monitoring.py`).
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable
from typing import Any

_handler: Any = None
_container: Any = None
_published_failures = 0  # the recorder's failures already published as AuditWriteFailures
# on Lambda (not where a test imports this module), until the first invocation ends: lambda_handler
_collector_paused = bool(os.environ.get("AWS_LAMBDA_FUNCTION_NAME")) and gc.isenabled()
if _collector_paused:
    gc.disable()


def _mangum() -> Any:
    global _handler, _container
    if _handler is None:
        from mangum import Mangum
        from terrace.bootstrap import aws_container
        from terrace.web.app import create_app

        _container = aws_container()
        _handler = Mangum(create_app(_container, lazy=True), lifespan="off")
    return _handler


def _serve(event: dict[str, Any], context: Any) -> dict[str, Any]:
    try:
        response: dict[str, Any] = _mangum()(event, context)
    finally:
        publish_audit_failures()
    return response


def publish_audit_failures() -> int:
    """Publish the audit events this environment failed to write since it last published (the count published)."""
    global _published_failures
    failures = _container.audit_recorder.failures if _container is not None else 0
    rise = failures - _published_failures
    if rise <= 0:
        return 0
    from aws_lambda_powertools import Metrics
    from aws_lambda_powertools.metrics import MetricUnit

    metrics = Metrics()
    metrics.add_metric(name="AuditWriteFailures", unit=MetricUnit.Count, value=rise)
    metrics.flush_metrics()
    _published_failures = failures
    return rise


def _traced(serve: Callable[[dict[str, Any], Any], dict[str, Any]]) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """`serve` under the Powertools tracer (the X-Ray SDK, patching boto3), when the environment asks for it."""
    if os.environ.get("TERRACE_XRAY_SDK", "").lower() not in ("1", "true"):
        return serve
    from aws_lambda_powertools import Tracer

    return Tracer().capture_lambda_handler(capture_response=False)(serve)


def _logged(serve: Callable[[dict[str, Any], Any], dict[str, Any]]) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """`serve` with the Powertools logger's Lambda context, which logs each event, when the environment asks."""
    if os.environ.get("POWERTOOLS_LOGGER_LOG_EVENT", "").lower() not in ("1", "true"):
        return serve
    from aws_lambda_powertools import Logger

    return Logger().inject_lambda_context(clear_state=True)(serve)


_entry: Callable[[dict[str, Any], Any], dict[str, Any]] | None = None


def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    global _entry
    if _entry is None:
        try:
            _entry = _logged(_traced(_serve))
            return _entry(event, context)
        finally:
            _collect_again()
    return _entry(event, context)


def _collect_again() -> None:
    """The end of the cold start: what it built is frozen out of the collector's scans, which start again."""
    global _collector_paused
    if _collector_paused:
        _collector_paused = False
        gc.freeze()
        gc.enable()
