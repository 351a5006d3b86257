"""CloudWatch console links for a run phase (AWS only): the runner's log lines of that job, and a Logs
Insights query for it. The runner logs one JSON line per output line with `job_id` (the plan-…/apply-… id).

The console keeps its state in the URL fragment, where `?`, `=` and `&` are written `$3F`, `$3D`, `$26`
and a percent-encoded value has its `%` written `$25`; Logs Insights' queryDetail is a rison-like
`~(...)` value whose strings are percent-encoded with `%` written `*`.
"""

from __future__ import annotations

from urllib.parse import quote

from terrace.config import Settings


def _console(region: str, fragment: str) -> str:
    return f"https://{region}.console.aws.amazon.com/cloudwatch/home?region={region}#{fragment}"


def _fragment_value(value: str) -> str:
    return quote(quote(value, safe=""), safe="").replace("%", "$")


def _insights_string(value: str) -> str:
    return quote(value, safe="").replace("%", "*")


def job_query(job_id: str) -> str:
    return f'fields @timestamp, @logStream, line\n| filter job_id = "{job_id}"\n| sort @timestamp asc'


def log_events_url(region: str, log_group: str, filter_pattern: str) -> str:
    """The log group's events across streams that match `filter_pattern` (each names its stream)."""
    fragment = (
        f"logsV2:log-groups/log-group/{_fragment_value(log_group)}/log-events"
        f"$3FfilterPattern$3D{_fragment_value(filter_pattern)}"
    )
    return _console(region, fragment)


def insights_url(region: str, log_group: str, query: str, last_s: int = 7 * 24 * 3600) -> str:
    detail = (
        f"~(end~0~start~-{last_s}~timeType~'RELATIVE~unit~'seconds"
        f"~editorString~'{_insights_string(query)}~source~(~'{_insights_string(log_group)}))"
    )
    return _console(region, f"logsV2:logs-insights$3FqueryDetail$3D{detail}")


def job_links(settings: Settings, job_id: str) -> list[tuple[str, str]]:
    """(label, URL) pairs for a phase's job; none outside AWS (local mode has no runner log group)."""
    if not settings.runner_log_group or settings.aws_endpoint_url:
        return []
    group, region = settings.runner_log_group, settings.region
    return [
        ("Runner log lines in CloudWatch", log_events_url(region, group, f'{{ $.job_id = "{job_id}" }}')),
        ("Logs Insights query for this job", insights_url(region, group, job_query(job_id))),
    ]
