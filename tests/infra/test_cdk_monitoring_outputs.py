"""Dashboard, alarms and the stack outputs a user needs after `cdk deploy`."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.infra


def test_no_dashboard_or_alarm_unless_asked_for(synth):
    """$3 a month for a dashboard, $0.10 an alarm: opt-in (`terrace:monitoring`, or `terrace:alarmEmail`)."""
    assert not synth.resources("AWS::CloudWatch::Dashboard")
    assert not synth.resources("AWS::CloudWatch::Alarm")
    assert "DashboardName" not in synth.template["Outputs"]


def test_dashboard_shows_runs_queue_depth_errors_and_latency(synth_options):
    [dashboard] = synth_options.resources("AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    for title in ("Runs", "Queue depth", "Function errors", "API latency"):
        assert title in body
    for metric in ("RunsFinished", "ApproximateNumberOfMessagesVisible", "Errors", "Latency"):
        assert metric in body


def test_alarms_on_function_errors_and_api_5xx(synth_options):
    alarms = synth_options.resources("AWS::CloudWatch::Alarm").values()
    metrics = sorted(a["Properties"]["MetricName"] for a in alarms)
    assert metrics.count("Errors") == 6  # api, scaler, reaper, events, tools_sync, logs
    assert "5xx" in metrics
    assert "DashboardName" in synth_options.template["Outputs"]
    dlqs = [a for a in alarms if a["Properties"]["MetricName"] == "ApproximateNumberOfMessagesVisible"]
    described = sorted(a["Properties"]["AlarmDescription"] for a in dlqs)
    assert [d.split(" the ")[1].split(" ")[0] for d in described] == sorted(
        ["events-dlq", "lane-apply-dlq", "lane-plan-dlq", "lane-speculative-dlq"]
    )
    ages = [a for a in alarms if a["Properties"]["MetricName"] == "ApproximateAgeOfOldestMessage"]
    assert len(ages) == 3 and all(a["Properties"]["Threshold"] == 900 for a in ages)  # the three lanes' backlog
    [failures] = [a for a in alarms if a["Properties"]["MetricName"] == "RunTaskFailures"]
    assert failures["Properties"]["Namespace"] == "Terrace"
    assert failures["Properties"]["Dimensions"] == [{"Name": "service", "Value": "terrace-scaler"}]


def test_a_backlog_held_for_want_of_room_alarms_on_the_scalers_own_count(synth_options):
    """SQS leaves a message received three times or more out of ApproximateAgeOfOldestMessage, and the scaler
    receives every waiting lane message at each tick: under contention the lanes' age alarms go blind. The scaler's
    `BacklogBlocked` (published at each tick, its schedule every 5 minutes, while phases wait for room) in three
    5-minute periods in a row is a backlog held 15 minutes."""
    alarms = synth_options.resources("AWS::CloudWatch::Alarm").values()
    [blocked] = [a["Properties"] for a in alarms if a["Properties"]["MetricName"] == "BacklogBlocked"]
    assert (blocked["Namespace"], blocked["Statistic"], blocked["Period"]) == ("Terrace", "Maximum", 300)
    assert blocked["Dimensions"] == [{"Name": "service", "Value": "terrace-scaler"}]
    assert blocked["EvaluationPeriods"] == blocked["DatapointsToAlarm"] == 3 and blocked["Threshold"] == 1
    assert blocked["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert blocked["TreatMissingData"] == "notBreaching"
    scaler_id, _ = synth_options.by_path("/Functions/Scaler/Resource")
    schedules = [
        r["Properties"]["ScheduleExpression"]
        for r in synth_options.resources("AWS::Events::Rule").values()
        if "ScheduleExpression" in r["Properties"]
        and any(t["Arn"] == {"Fn::GetAtt": [scaler_id, "Arn"]} for t in r["Properties"]["Targets"])
    ]
    assert schedules == ["rate(5 minutes)"]  # a datapoint in every period the backlog waits


def test_alarm_email_option_notifies_through_an_ssl_only_topic(synth_options):
    [topic] = synth_options.resources("AWS::SNS::Topic")
    alarms = synth_options.resources("AWS::CloudWatch::Alarm").values()
    assert all(a["Properties"]["AlarmActions"] == [{"Ref": topic}] for a in alarms)
    [subscription] = synth_options.resources("AWS::SNS::Subscription").values()
    assert subscription["Properties"]["Endpoint"] == "ops@example.com"


def test_outputs_url_hostname_admin_token_and_cli_snippet(synth):
    outputs = synth.template["Outputs"]
    dist_id = next(iter(synth.resources("AWS::CloudFront::Distribution")))
    assert outputs["Hostname"]["Value"] == {"Fn::GetAtt": [dist_id, "DomainName"]}
    assert outputs["Url"]["Value"] == {"Fn::Join": ["", ["https://", {"Fn::GetAtt": [dist_id, "DomainName"]}]]}
    assert outputs["AdminTokenParameter"]["Value"] == "/terrace/Terrace/admin-token"
    snippet = json.dumps(outputs["CliSnippet"]["Value"])
    assert "export TF_TOKEN_" in snippet and "aws ssm get-parameter --with-decryption" in snippet
    assert "/terrace/Terrace/admin-token" in snippet


def test_saved_logs_insights_queries_for_runner_events_and_api_errors(synth):
    queries = {q["Properties"]["Name"]: q["Properties"] for q in synth.resources("AWS::Logs::QueryDefinition").values()}
    assert set(queries) == {"Terrace/Runner events", "Terrace/API errors"}
    runner_logs, _ = synth.by_path("/Runner/Logs/Resource")
    api_logs, _ = synth.by_path("/Api/HandlerLogs/Resource")
    run_query = queries["Terrace/Runner events"]
    assert "message like" in run_query["QueryString"]
    assert run_query["LogGroupNames"] == [{"Ref": runner_logs}]
    errors = queries["Terrace/API errors"]
    assert 'level = "ERROR"' in errors["QueryString"] and errors["LogGroupNames"] == [{"Ref": api_logs}]


def test_no_run_page_links_into_the_runners_log_group(synth):
    """Job output is not in CloudWatch (TERRACE_RUNNER_ECHO_OUTPUT=false): the run page shows no CloudWatch links
    (web/ui/cloudwatch.py gives none without TERRACE_RUNNER_LOG_GROUP); Terrace's own log view has the output."""
    _, fn = synth.by_path("/Api/Handler/Resource")
    assert "TERRACE_RUNNER_LOG_GROUP" not in fn["Properties"]["Environment"]["Variables"]


def test_a_failed_audit_write_alarms_on_the_metric_the_api_function_publishes(synth_options, synth):
    """The api function publishes `AuditWriteFailures` (functions/api/handler.py) and declares it; one alarms."""
    [alarm] = [a for a in synth_options.resources("AWS::CloudWatch::Alarm").values()
               if a["Properties"]["MetricName"] == "AuditWriteFailures"]  # fmt: skip
    props = alarm["Properties"]
    assert props["Namespace"] == "Terrace" and props["Statistic"] == "Sum" and props["Threshold"] == 1
    assert props["Dimensions"] == [{"Name": "service", "Value": "terrace-api"}]
    assert props["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert props["TreatMissingData"] == "notBreaching"
    functions = synth_options.resources("AWS::Lambda::Function").values()
    [api] = [f for f in functions if _variables(f).get("POWERTOOLS_SERVICE_NAME") == "terrace-api"]
    assert api["Properties"]["Environment"]["Variables"]["POWERTOOLS_METRICS_DISABLED"] == "false"
    assert "AuditWriteFailures" in json.dumps(api.get("Metadata", {}))


def _variables(function: dict) -> dict:
    return dict(function["Properties"].get("Environment", {}).get("Variables", {}))


def test_audit_logs_option_gives_the_reaper_a_log_group_to_send_the_trail_to(synth_options, synth):
    """`terrace:auditLogs`: the reaper's audit export (services/audit/export.py) also sends every event to a log
    group of the stack, which it alone may write; without the option there is none and the reaper has no setting."""
    group_id, group = synth_options.by_path("/AuditLogs/Resource")
    assert group["DeletionPolicy"] == "Delete" and group["Properties"]["RetentionInDays"] <= 30
    _, reaper = synth_options.by_path("/Functions/Reaper/Resource")
    assert reaper["Properties"]["Environment"]["Variables"]["TERRACE_AUDIT_LOG_GROUP"] == {"Ref": group_id}
    writers = [
        policy
        for policy in synth_options.resources("AWS::IAM::Policy").values()
        if group_id in json.dumps(policy["Properties"]["PolicyDocument"])
    ]
    assert len(writers) == 1 and "logs:PutLogEvents" in json.dumps(writers[0])
    _, plain = synth.by_path("/Functions/Reaper/Resource")
    assert "TERRACE_AUDIT_LOG_GROUP" not in plain["Properties"]["Environment"]["Variables"]
