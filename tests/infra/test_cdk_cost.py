"""bench/cost.py prices what the template actually contains, every billable resource of it, and the default
deployment meets the issue's budget: at most $1.00 a month idle (before storage), $2.00 per 1,000 runs."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from pathlib import Path

import pytest

from bench import cost
from bench.cost_catalog import FREE, MONTH_MINUTES, PRICED, PRICES, PROFILES, RunProfile

pytestmark = pytest.mark.infra
FUNCTIONS = Path(__file__).resolve().parents[2] / "functions"


def _lines(template):
    return {line.item: line for line in cost.estimate(template)}


def _totals(template):
    lines = cost.estimate(template)
    return sum(x.idle_month for x in lines), sum(x.per_1000_runs for x in lines)


def test_the_default_deployment_meets_the_budget(synth):
    idle, runs = _totals(synth.template)
    assert 0 < idle <= 1.00, idle
    assert 0 < runs <= 2.00, runs
    lines = _lines(synth.template)
    assert "KMS key (+ rotated versions)" not in lines
    assert lines["Secrets Manager secrets"].idle_month == 0
    assert lines["CloudWatch dashboard"].idle_month == lines["CloudWatch alarms"].idle_month == 0
    assert lines["X-Ray traces"].per_1000_runs == 0 and lines["Custom metrics"].per_1000_runs == 0


def test_every_resource_type_of_every_template_is_priced_or_known_free(synth, synth_options):
    assert not set(PRICED) & set(FREE)
    for template in (synth.template, synth_options.template):
        assert cost.unpriced(template) == set()
    with_new = copy.deepcopy(synth.template)
    with_new["Resources"]["Extra"] = {"Type": "AWS::RDS::DBInstance", "Properties": {}}
    assert cost.unpriced(with_new) == {"AWS::RDS::DBInstance"}  # a new billable type fails this test
    assert "UNPRICED resource types" in cost.render(with_new)


def test_fargate_is_priced_from_the_task_definition_with_its_idle_tail(synth):
    fargate = _lines(synth.template)["Fargate Graviton 0.5 vCPU/2 GB"]
    run = RunProfile()
    # one task: its start, the plan, the apply (handed to the plan's runner), no idle tail: its run is done once the
    # apply ends (TERRACE_RUNNER_DONE_EXIT_S=0); the apply skips `terraform init`
    task_s = run.task_start_s + 2 * run.phase_seconds - run.init_seconds
    expected = task_s / 3600 * (0.5 * PRICES["fargate_arm_vcpu_h"] + 2 * PRICES["fargate_arm_gb_h"]) * 1000
    assert fargate.per_1000_runs == pytest.approx(expected)


def test_options_show_their_cost(synth_options):
    """NAT gateway and its address, the KMS key with its rotated versions, dashboard and alarms, X-Ray on the API,
    the custom metrics the handlers publish."""
    lines = _lines(synth_options.template)
    assert lines["NAT gateway"].idle_month == pytest.approx(PRICES["nat_gateway_h"] * 720)
    assert lines["Elastic IP (NAT)"].idle_month == pytest.approx(PRICES["public_ipv4_h"] * 720)
    assert lines["NAT gateway data"].per_1000_runs > 0
    assert "Runner public IPv4" not in lines
    assert lines["KMS key (+ rotated versions)"].idle_month == 3 * PRICES["kms_key_month"]
    assert lines["CloudWatch dashboard"].idle_month == PRICES["dashboard_month"]
    assert lines["X-Ray traces"].per_1000_runs > 0
    # the scaler's, the events function's and the api's AuditWriteFailures (published only when an audit write failed,
    # priced as if every hour)
    metrics = 4 + 3 + 1
    assert lines["Custom metrics"].per_1000_runs == pytest.approx(metrics * PRICES["custom_metric_month"])


def test_x_ray_on_a_traced_schedule_is_priced(synth):
    template = copy.deepcopy(synth.template)
    [reaper] = [r for r in template["Resources"].values() if r.get("Metadata", {}).get(
        "aws:cdk:path", "").endswith("/Functions/Reaper/Resource")]  # fmt: skip
    assert _lines(template)["  X-Ray on reaper's schedule"].idle_month == 0
    reaper["Properties"]["TracingConfig"] = {"Mode": "Active"}
    assert _lines(template)["  X-Ray on reaper's schedule"].idle_month == pytest.approx(
        MONTH_MINUTES * PRICES["xray_trace"]
    )


def test_declared_custom_metrics_are_the_ones_the_handlers_publish(synth_options):
    """The template's `terrace:customMetrics` (what the bench prices) matches the handlers' add_metric calls."""
    from infra.functions import METRICS

    for name, declared in METRICS.items():
        source = (FUNCTIONS / name / "handler.py").read_text()
        published = set(re.findall(r'add_metric\(name="(\w+)"', source))
        if name == "scaler":  # the scaler's (name, summary key) pairs
            published |= set(re.findall(r'\("(\w+)", "\w+"\)', source))
        assert published == set(declared), name
    declared_in_template = {m for _, m in cost.Resources(synth_options.template).custom_metrics()}
    assert declared_in_template == {m for ms in METRICS.values() for m in ms}


def test_render_prints_a_dated_table_and_its_assumptions(synth):
    text = cost.render(synth.template)
    assert cost.PRICES_AS_OF in text and "total" in text and "$/1,000 runs" in text
    assert "Assumptions" in text and "phase_seconds=50" in text and "api_requests_per_run=" in text


def test_speculative_plans_are_priced_at_the_spot_rate_with_the_assumption_printed(synth, synth_options):
    text = cost.render(synth.template)
    hour = 0.5 * PRICES["fargate_arm_vcpu_h"] + 2 * PRICES["fargate_arm_gb_h"]
    on_demand = (RunProfile().task_start_s + RunProfile().phase_seconds) / 3600 * hour * 1000  # no tail: done
    spot = on_demand * (1 - PRICES["fargate_spot_discount"])
    assert f"on FARGATE_SPOT): ${spot:.2f} per 1,000 instead of ${on_demand:.2f} on FARGATE" in text
    assert "assuming Spot 70% below on-demand" in text
    assert "FARGATE_SPOT" not in cost.render(synth_options.template)  # terrace:speculativeOnSpot=false there


def test_warm_runners_are_priced_per_active_organization(synth, synth_options):
    assert not any(item.startswith("Warm runners") for item in _lines(synth.template))
    lines = _lines(synth_options.template)  # terrace:warmRunners=1, private subnets (no public IPv4)
    hour = 0.5 * PRICES["fargate_arm_vcpu_h"] + 2 * PRICES["fargate_arm_gb_h"]
    assert lines["Warm runners: Fargate (+ public IPv4)"].idle_month == pytest.approx(720 * hour)
    assert lines["Warm runners: their polls"].idle_month > 0
    assert "1 active organization" in lines["Warm runners: Fargate (+ public IPv4)"].note


def test_the_warm_window_is_a_note_priced_per_burst_of_activity(synth, synth_options):
    """terrace:warmWindowMinutes (15 by default) costs nothing while nobody works: a note, not in the totals."""
    from bench.cost import render

    text = render(synth.template)
    (note,) = [line for line in text.splitlines() if line.startswith("The warm window")]
    assert "terrace:warmWindowMinutes=15" in note and "a window" in note and "/month" in note
    assert "The warm window" not in render(synth_options.template)  # turned off there


def test_the_lanes_requests_are_priced_from_the_lanes_the_scaler_drains(synth):
    """Each scaler tick receives from every lane (its schedule idle, its invocations per run); each phase is sent to
    its lane and deleted once claimed. A lane fewer in the template is three requests a run fewer."""
    run = RunProfile()
    assert cost.Resources(synth.template).lanes() == 3
    lines = _lines(synth.template)
    per_run = run.events_sqs_requests_per_run + 2 * run.phases + run.scaler_invocations * 3
    assert lines["SQS requests (events, lanes)"].per_1000_runs == pytest.approx(per_run * PRICES["sqs_request"] * 1000)
    fewer = copy.deepcopy(synth.template)
    [scaler] = [r for r in fewer["Resources"].values() if r.get("Metadata", {}).get(
        "aws:cdk:path", "").endswith("/Functions/Scaler/Resource")]  # fmt: skip
    del scaler["Properties"]["Environment"]["Variables"]["TERRACE_QUEUE_URL_LANE_SPECULATIVE"]
    ticks = MONTH_MINUTES / 5
    assert _lines(synth.template)["Schedule: scaler"].idle_month - _lines(fewer)["Schedule: scaler"].idle_month == (
        pytest.approx(ticks * PRICES["sqs_request"])
    )
    item = "SQS requests (events, lanes)"
    saved = lines[item].per_1000_runs - _lines(fewer)[item].per_1000_runs
    assert saved == pytest.approx(run.scaler_invocations * PRICES["sqs_request"] * 1000)


def test_the_cost_benchmark_prices_the_synthesized_template(synth, tmp_path, capsys):
    """`python -m bench.cost --template ...` (the smoke run of the benchmark `make test` holds)."""
    template = tmp_path / "template.json"
    template.write_text(json.dumps(synth.template))
    assert cost.main(["--template", str(template)]) == 0
    said = capsys.readouterr().out
    assert "Assumptions (bench/cost_catalog.py):" in said and "UNPRICED" not in said


def test_a_template_cdk_synth_wrote_is_priced_with_its_metadata(synth, tmp_path, capsys):
    """`cdk synth` adds `AWS::CDK::Metadata` (the tests synthesize without it): no AWS resource, and no exit 1."""
    with_metadata = copy.deepcopy(synth.template)
    with_metadata["Resources"]["CDKMetadata"] = {"Type": "AWS::CDK::Metadata", "Properties": {"Analytics": "v2:..."}}
    template = tmp_path / "Terrace.template.json"
    template.write_text(json.dumps(with_metadata))
    assert cost.main(["--template", str(template), "--profile", "aws-provider"]) == 0
    assert "UNPRICED" not in capsys.readouterr().out


def test_the_clis_log_reads_are_priced_and_never_held_on_aws(synth):
    """terraform reads a running phase's log about once a `log_poll_s`; each read reads the run and the new chunks
    (two read units). A held read (the embedded default) held the api Lambda through the whole stream, re-reading
    every 0.1 s; reading the whole log each time cost more units the longer the log."""
    run = RunProfile()
    lines = _lines(synth.template)
    reads = run.phases * run.log_stream_s / run.log_poll_s
    assert f"{2 * reads:.0f} read units/run for log reads" in lines["DynamoDB on-demand"].note
    held = copy.deepcopy(synth.template)
    [api] = [r for r in held["Resources"].values() if r.get("Metadata", {}).get(
        "aws:cdk:path", "").endswith("/Api/Handler/Resource")]  # fmt: skip
    del api["Properties"]["Environment"]["Variables"]["TERRACE_LOG_READ_WAIT_S"]
    del api["Properties"]["Environment"]["Variables"]["TERRACE_LOG_READ_URL"]  # read on the api function, as before
    held_lambda = _lines(held)["Lambda (api, scaler, events)"].per_1000_runs
    held_s = run.phases * run.log_stream_s  # a 1 GB api function
    assert (
        held_lambda
        > lines["Lambda (api, scaler, events)"].per_1000_runs + 0.9 * held_s * PRICES["lambda_arm_gb_s"] * 1000
    )
    before = cost.per_1000_runs(held, dataclasses.replace(run, whole_log_reads=True))
    assert before > cost.per_1000_runs(synth.template, run) + 0.9  # what the review measured: $3.34 against $1.90


def test_every_profile_is_printed_with_what_it_cost_before(synth):
    text = cost.render(synth.template)
    assert all(re.search(rf"  {name} +\$\d+\.\d\d  \(\$\d+\.\d\d with log reads held", text) for name in PROFILES)
    # issue 44's goal, for both profiles: the project's own runs and a small AWS-provider run
    prices = {name: cost.per_1000_runs(synth.template, profile) for name, profile in PROFILES.items()}
    assert {"terrace", "aws-provider"} <= set(prices) and max(prices.values()) <= 2.0, prices


def test_an_apply_confirmed_after_its_runner_left_is_a_task_of_its_own(synth, synth_options):
    """The plan's runner runs the apply when the plan hands it over (auto-apply) or the CLI confirms within its
    polls (`python -m bench.run_requests`: one runner, the apply in the plan's folder); a person who confirms after
    the runner idled out pays a second start, tail and provider download."""
    run = RunProfile()
    late = dataclasses.replace(run, late_apply_share=1.0)
    fargate = "Fargate Graviton 0.5 vCPU/2 GB"
    hour = 0.5 * PRICES["fargate_arm_vcpu_h"] + 2 * PRICES["fargate_arm_gb_h"]
    added = cost.run_lines(cost.Resources(synth.template), late)[0]
    once = {line.item: line.per_1000_runs for line in cost.run_lines(cost.Resources(synth.template), run)[0]}
    twice = {line.item: line.per_1000_runs for line in added}
    extra_s = run.task_start_s + 10 + run.init_seconds  # the plan's task idles out holding its folder (10 s)
    assert twice[fargate] - once[fargate] == pytest.approx(extra_s / 3600 * hour * 1000)
    nat = {line.item: line.note for line in cost.run_lines(cost.Resources(synth_options.template), late)[0]}
    assert nat["NAT gateway data"] == f"{2 * run.runner_download_mb_per_phase / 1024:.2f} GB/run"


def test_the_runners_requests_follow_its_code(synth):
    """Per task: enrollment, the claim and the empty answer it exits at once its run is done (no idle tail: a tail of
    polls every 2 s before); per phase: a log PUT every FLUSH_S while it streams, the first at once, and a heartbeat
    every TERRACE_JOB_HEARTBEAT_S while it prints nothing (a PUT stands for one); the plan's finish and upload URLs,
    the apply's start and finish."""
    from terrace.runner.logstream import FLUSH_S

    run = RunProfile()
    _, derived = cost.run_lines(cost.Resources(synth.template), run)
    polls = 1 + 1
    phases = 2 * ((run.phase_seconds - run.log_stream_s) / 10 + run.log_stream_s / FLUSH_S + 1)
    assert derived["runner_polls_per_run"] == polls
    assert derived["runner_requests_per_run"] == 1 + polls + run.runner_phase_requests + phases


def test_the_clis_log_reads_reach_the_logs_function_without_cloudfront_or_the_http_api(synth):
    """A log-read URL is a signed capability: its reads go to the logs function's URL (infra/log_reads.py), each one
    Lambda request and nothing more; every other request still passes CloudFront and the HTTP API."""
    for name, run in PROFILES.items():
        lines, derived = cost.run_lines(cost.Resources(synth.template), run)
        by_item = {line.item: line.per_1000_runs for line in lines}
        fronted = derived["api_requests_per_run"] - derived["log_reads_per_run"]
        assert by_item["HTTP API"] == pytest.approx(fronted * PRICES["http_api_request"] * 1000), name
        assert by_item["CloudFront requests"] == pytest.approx(fronted * PRICES["cloudfront_https_request"] * 1000)
        assert cost.per_1000_runs(synth.template, run) <= 2.0, name
    through_cloudfront = copy.deepcopy(synth.template)
    [api] = [r for r in through_cloudfront["Resources"].values() if r.get("Metadata", {}).get(
        "aws:cdk:path", "").endswith("/Api/Handler/Resource")]  # fmt: skip
    del api["Properties"]["Environment"]["Variables"]["TERRACE_LOG_READ_URL"]  # terrace:logReadsDirect=false
    run = PROFILES["aws-provider"]
    reads = cost.run_lines(cost.Resources(synth.template), run)[1]["log_reads_per_run"]
    saved = reads * (PRICES["http_api_request"] + PRICES["cloudfront_https_request"]) * 1000
    assert cost.per_1000_runs(through_cloudfront, run) == pytest.approx(cost.per_1000_runs(synth.template, run) + saved)
