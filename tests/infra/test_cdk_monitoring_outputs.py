"""Dashboard, alarms and the stack outputs a user needs after `cdk deploy`."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.infra


def test_dashboard_shows_runs_queue_depth_errors_and_latency(synth):
    [dashboard] = synth.resources("AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    for title in ("Runs", "Queue depth", "Function errors", "API latency"):
        assert title in body
    for metric in ("RunsFinished", "ApproximateNumberOfMessagesVisible", "Errors", "Latency"):
        assert metric in body


def test_alarms_on_function_errors_and_api_5xx(synth):
    alarms = synth.resources("AWS::CloudWatch::Alarm").values()
    metrics = sorted(a["Properties"]["MetricName"] for a in alarms)
    assert metrics.count("Errors") == 4
    assert "5xx" in metrics
    assert "ApproximateNumberOfMessagesVisible" not in metrics  # no job dead-letter queue any more
    assert all(not a["Properties"].get("AlarmActions") for a in alarms)


def test_alarm_email_option_notifies_through_an_ssl_only_topic(synth_options):
    [topic] = synth_options.resources("AWS::SNS::Topic")
    alarms = synth_options.resources("AWS::CloudWatch::Alarm").values()
    assert all(a["Properties"]["AlarmActions"] == [{"Ref": topic}] for a in alarms)
    [subscription] = synth_options.resources("AWS::SNS::Subscription").values()
    assert subscription["Properties"]["Endpoint"] == "ops@example.com"


def test_outputs_url_hostname_admin_token_and_cli_snippet(synth):
    outputs = synth.template["Outputs"]
    dist_id = next(iter(synth.resources("AWS::CloudFront::Distribution")))
    secret_id, _ = synth.by_path("/Secrets/BootstrapAdminToken/Resource")
    assert outputs["Hostname"]["Value"] == {"Fn::GetAtt": [dist_id, "DomainName"]}
    assert outputs["Url"]["Value"] == {"Fn::Join": ["", ["https://", {"Fn::GetAtt": [dist_id, "DomainName"]}]]}
    assert outputs["AdminTokenSecretArn"]["Value"] == {"Ref": secret_id}
    snippet = json.dumps(outputs["CliSnippet"]["Value"])
    assert "export TF_TOKEN_" in snippet and "get-secret-value" in snippet and secret_id in snippet


def test_saved_logs_insights_queries_for_a_runs_logs_and_api_errors(synth):
    queries = {q["Properties"]["Name"]: q["Properties"] for q in synth.resources("AWS::Logs::QueryDefinition").values()}
    assert set(queries) == {"Terrace/A run's logs", "Terrace/API errors"}
    runner_logs, _ = synth.by_path("/Runner/Logs/Resource")
    api_logs, _ = synth.by_path("/Api/HandlerLogs/Resource")
    run_query = queries["Terrace/A run's logs"]
    assert "job_id like" in run_query["QueryString"] and "line" in run_query["QueryString"]
    assert run_query["LogGroupNames"] == [{"Ref": runner_logs}]
    errors = queries["Terrace/API errors"]
    assert 'level = "ERROR"' in errors["QueryString"] and errors["LogGroupNames"] == [{"Ref": api_logs}]


def test_api_knows_the_runner_log_group_for_the_run_pages_links(synth):
    runner_logs, _ = synth.by_path("/Runner/Logs/Resource")
    _, fn = synth.by_path("/Api/Handler/Resource")
    assert fn["Properties"]["Environment"]["Variables"]["TERRACE_RUNNER_LOG_GROUP"] == {"Ref": runner_logs}
