"""What a deployed Terrace costs: idle per month (before storage), and per 1,000 runs.

Prices every billable resource of the synthesized CloudFormation template (`python -m bench.cost` synthesizes it
in-process, without bundling; `--template cdk.out/Terrace.template.json` reads a synthesized one;
`-c terrace:monitoring=true` and the like synthesize with options) with the us-east-1 list prices of
bench/cost_catalog.py. Free tiers are ignored (a first-year account pays less); storage (S3, DynamoDB, log
retention, backups) is left out: it grows with use, not with time. The assumptions are printed with the table.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import tempfile
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from terrace.config import Settings
from terrace.runner.logstream import FLUSH_S

from bench.cost_catalog import (
    MONTH_HOURS,
    MONTH_MINUTES,
    PRICES,
    PRICES_AS_OF,
    PROFILES,
    IdleProfile,
    RunProfile,
)
from bench.cost_logs import hold_s, log_reads
from bench.cost_template import Line, Resources, unpriced

REPO = Path(__file__).resolve().parent.parent
HEARTBEAT_S = float(Settings.model_fields["job_heartbeat_s"].default)  # a running job's beat (TERRACE_JOB_HEARTBEAT_S)


def idle_lines(r: Resources, idle: IdleProfile, run: RunProfile) -> list[Line]:
    p = PRICES
    lines = []
    for key in r.of("AWS::KMS::Key"):
        rotation = 2 * p["kms_rotation_month"] if key["Properties"].get("EnableKeyRotation") else 0
        note = "$1, $2 in year 2, then $3"
        lines.append(Line("KMS key (+ rotated versions)", p["kms_key_month"] + rotation, 0, note))
    lines.append(Line("Secrets Manager secrets", len(r.of("AWS::SecretsManager::Secret")) * p["secret_month"], 0))
    lines.append(Line("CloudWatch alarms", len(r.of("AWS::CloudWatch::Alarm")) * p["alarm_month"], 0))
    lines.append(Line("CloudWatch dashboard", len(r.of("AWS::CloudWatch::Dashboard")) * p["dashboard_month"], 0))
    endpoint_azs = sum(
        len(e["Properties"].get("SubnetIds", []))
        for e in r.of("AWS::EC2::VPCEndpoint")
        if e["Properties"].get("VpcEndpointType") == "Interface"
    )
    lines.append(Line("Interface endpoints", endpoint_azs * p["interface_endpoint_az_h"] * MONTH_HOURS, 0))
    lines.append(Line("NAT gateway", len(r.of("AWS::EC2::NatGateway")) * p["nat_gateway_h"] * MONTH_HOURS, 0))
    lines.append(Line("Elastic IP (NAT)", len(r.of("AWS::EC2::EIP")) * p["public_ipv4_h"] * MONTH_HOURS, 0))
    if r.of("AWS::ECS::TaskDefinition"):
        lines.append(Line(f"ECR image (~{run.ecr_image_gb:g} GB)", run.ecr_image_gb * p["ecr_gb_month"], 0))
    for service, ticks, fn in r.schedules():
        gb_s = ticks * run.background_ms / 1000 * r.memory_gb(fn)
        cost = ticks * p["lambda_request"] + gb_s * p["lambda_arm_gb_s"]
        cost += ticks * idle.tick_ddb_reads * p["ddb_read_request_unit"]
        cost += ticks * idle.tick_log_kb / 1024 / 1024 * p["logs_ingest_gb"]
        xray = ticks * p["xray_trace"] if r.traced(fn) else 0.0
        cost += ticks * r.lanes() * p["sqs_request"] if service == "scaler" else 0.0  # a receive from each lane
        lines.append(Line(f"Schedule: {service}", cost, 0, f"{ticks:,.0f} invocations/month"))
        lines.append(Line(f"  X-Ray on {service}'s schedule", xray, 0))
    polls = len(r.of("AWS::Lambda::EventSourceMapping")) * idle.event_source_long_polls_per_minute * MONTH_MINUTES
    lines.append(Line("SQS event source polling", polls * p["sqs_request"], 0, f"{polls:,.0f} long polls"))
    lines.extend(warm_lines(r, idle, run))
    return lines


def scaler_env(r: Resources) -> dict[str, Any]:
    return dict(r.function("scaler")["Properties"]["Environment"]["Variables"])


def fargate_hour(r: Resources) -> float:
    vcpu, mem_gb, _ = r.task()
    return vcpu * PRICES["fargate_arm_vcpu_h"] + mem_gb * PRICES["fargate_arm_gb_h"]


def warm_lines(r: Resources, idle: IdleProfile, run: RunProfile) -> list[Line]:
    """`terrace:warmRunners`: that many runners per organization with work within a day, all month, polling."""
    if not r.of("AWS::ECS::TaskDefinition"):
        return []
    warm = int(scaler_env(r).get("TERRACE_WARM_RUNNERS", 0)) * idle.active_organizations
    if warm <= 0:
        return []
    _, _, env = r.task()
    interval = float(env.get("TERRACE_RUNNER_POLL_INTERVAL_S", run.runner_poll_s)) or run.runner_poll_s
    polls = warm * MONTH_HOURS * 3600 / interval
    p, api = PRICES, r.function("api")
    per_poll = p["lambda_request"] + run.api_ms / 1000 * r.memory_gb(api) * p["lambda_arm_gb_s"]
    per_poll += p["http_api_request"] + p["cloudfront_https_request"] + run.ddb_reads_per_request * p[
        "ddb_read_request_unit"]  # fmt: skip
    ipv4 = p["public_ipv4_h"] if r.public_runners() else 0.0
    note = f"{warm} runner(s): terrace:warmRunners x {idle.active_organizations} active organization(s)"
    return [
        Line("Warm runners: Fargate (+ public IPv4)", warm * MONTH_HOURS * (fargate_hour(r) + ipv4), 0, note),
        Line("Warm runners: their polls", polls * per_poll, 0, f"{polls:,.0f} polls/month"),
    ]


def window_line(r: Resources) -> str:
    """`terrace:warmWindowMinutes`: a runner of plans kept after each burst of activity. It costs nothing while no
    one works, so it is a note beside the totals, priced by `bench.warm_window` (docs/performance.md)."""
    from terrace.adapters.runner_launcher import WARM_POLL_S

    from bench.warm_window import window_cost

    minutes = int(scaler_env(r).get("TERRACE_WARM_WINDOW_MINUTES", 0)) if r.of("AWS::ECS::TaskDefinition") else 0
    if minutes <= 0:
        return ""
    vcpu, mem_gb, _ = r.task()
    cost = window_cost(minutes, WARM_POLL_S, 220, vcpu, mem_gb, r.memory_gb(r.function("api")))
    return (
        f"The warm window (terrace:warmWindowMinutes={minutes}), not in the totals: ${cost.per_window:.4f} a window "
        f"after a burst of activity (one runner of plans on Fargate Spot, its IPv4 and polls, the logs function's "
        f"warm-up); ten bursts a working day ${cost.month:.2f}/month"
    )


def speculative_line(r: Resources, run: RunProfile) -> str:
    """What a speculative plan's runner costs, on FARGATE_SPOT when the scaler runs that lane there."""
    if not r.of("AWS::ECS::TaskDefinition"):
        return ""
    _, _, env = r.task()
    task_s = run.task_start_s + run.phase_seconds + idle_tails(env)[1]  # no folder held: its run is done
    on_demand = task_s / 3600 * fargate_hour(r) * 1000
    if "speculative" not in str(scaler_env(r).get("TERRACE_RUNNER_SPOT_LANES", "")).split(","):
        return f"a speculative plan (one phase, {task_s:g} task-s on FARGATE): ${on_demand:.2f} per 1,000"
    spot = on_demand * (1 - PRICES["fargate_spot_discount"])
    return (
        f"a speculative plan (one phase, {task_s:g} task-s on FARGATE_SPOT): ${spot:.2f} per 1,000 instead of "
        f"${on_demand:.2f} on FARGATE, assuming Spot {PRICES['fargate_spot_discount']:.0%} below on-demand (AWS says "
        "'up to 70%'; the Spot price moves); FARGATE when Spot has no capacity, at the FARGATE price"
    )


def idle_tails(env: dict[str, str]) -> tuple[float, float]:
    """(a task's idle tail while it holds a plan's folder for its apply: TERRACE_RUNNER_IDLE_EXIT_S, its tail once
    its run's work is done: TERRACE_RUNNER_DONE_EXIT_S, else the same; runner/main.py `_exit_after_s`)."""
    held = float(env.get("TERRACE_RUNNER_IDLE_EXIT_S", 0))
    done = env.get("TERRACE_RUNNER_DONE_EXIT_S", "").strip()
    return held, float(done) if done else held


def runner_requests(tails_s: float, env: dict[str, str], run: RunProfile, tasks: float) -> tuple[float, float]:
    """(the runner's requests per run, of which polls). Each task enrolls, claims its first job and, after its last
    job, polls every TERRACE_RUNNER_POLL_INTERVAL_S until it idles out (`tails_s` of all its tasks; no brisk polls:
    nothing is expected); each phase PUTs its output once a `FLUSH_S` while it streams, the first lines at once
    (runner/logstream.py), and beats every TERRACE_JOB_HEARTBEAT_S only while it prints nothing (a log PUT stands for
    a heartbeat)."""
    interval = float(env.get("TERRACE_RUNNER_POLL_INTERVAL_S", run.runner_poll_s)) or run.runner_poll_s
    polls = tasks * 2 + tails_s / interval  # the claim, then the tails' polls and the one each task exits after
    heartbeats = run.phases * max(run.phase_seconds - run.log_stream_s, 0) / HEARTBEAT_S
    puts = run.phases * (run.log_stream_s / FLUSH_S + 1)
    return tasks + polls + run.runner_phase_requests + heartbeats + puts, polls


def run_lines(r: Resources, run: RunProfile) -> tuple[list[Line], dict[str, float]]:
    p, k = PRICES, 1000
    lines: list[Line] = []
    vcpu, mem_gb, env = r.task()
    held, done = idle_tails(env)
    tasks = 1 + run.late_apply_share  # the plan's task runs the apply (a late-confirmed one starts its own)
    # the run's last task idles out once its work is done; a plan's task whose apply came late, holding its folder
    tails = done + run.late_apply_share * held
    task_s = tasks * run.task_start_s + tails + run.phases * run.phase_seconds
    task_s -= (1 - run.late_apply_share) * run.init_seconds  # the apply in the plan's folder: no second init
    fargate = task_s / 3600 * (vcpu * p["fargate_arm_vcpu_h"] + mem_gb * p["fargate_arm_gb_h"])
    lines.append(Line(f"Fargate Graviton {vcpu:g} vCPU/{mem_gb:g} GB", 0, fargate * k, f"{task_s:g} task-s/run"))
    if r.public_runners():
        lines.append(Line("Runner public IPv4", 0, task_s / 3600 * p["public_ipv4_h"] * k))
    if r.of("AWS::EC2::NatGateway"):
        nat_gb = tasks * run.runner_download_mb_per_phase / 1024  # an apply in the plan's folder downloads nothing
        lines.append(Line("NAT gateway data", 0, nat_gb * p["nat_gateway_gb"] * k, f"{nat_gb:.2f} GB/run"))
    runner, polls = runner_requests(tails, env, run, tasks)
    api = r.function("api")
    reader = r.log_reader() or api  # the function the CLI's log reads reach: its own URL, or the api's routes
    logs = log_reads(reader["Properties"]["Environment"]["Variables"], r.memory_gb(reader), run)
    requests = run.client_requests + run.backend_requests + runner + logs.requests
    fronted = requests - (logs.requests if reader is not api else 0)  # through CloudFront and the HTTP API
    background = run.scaler_invocations + run.events_invocations
    gb_s = (requests - logs.requests) * run.api_ms / 1000 * r.memory_gb(api) + logs.held_gb_s
    gb_s += logs.requests * run.api_ms / 1000 * r.memory_gb(reader)
    gb_s += background * run.background_ms / 1000 * r.memory_gb(r.function("events"))
    lambda_cost = (requests + background) * p["lambda_request"] + gb_s * p["lambda_arm_gb_s"]
    lines.append(Line("Lambda (api, scaler, events)", 0, lambda_cost * k, f"{requests:.0f} API requests/run"))
    direct = "" if reader is api else f"{fronted:.0f}/run: the CLI's log reads go to the logs function's URL"
    lines.append(Line("HTTP API", 0, fronted * p["http_api_request"] * k, direct))
    lines.append(Line("CloudFront requests", 0, fronted * p["cloudfront_https_request"] * k))
    others = requests - logs.requests  # a log read's units are the log model's
    ddb = others * (
        run.ddb_reads_per_request * p["ddb_read_request_unit"]
        + run.ddb_writes_per_request * p["ddb_write_request_unit"]
    )
    ddb += logs.read_units * p["ddb_read_request_unit"]
    lines.append(Line("DynamoDB on-demand", 0, ddb * k, f"{logs.read_units:.0f} read units/run for log reads"))
    lines.append(Line("S3 requests", 0, (run.s3_puts * p["s3_put"] + run.s3_gets * p["s3_get"]) * k))
    # each phase is sent to its lane and deleted once claimed; each scaler invocation receives from every lane
    sqs = run.events_sqs_requests_per_run + 2 * run.phases + run.scaler_invocations * r.lanes()
    lines.append(Line("SQS requests (events, lanes)", 0, sqs * p["sqs_request"] * k, f"{sqs} requests/run"))
    log_kb = run.phases * run.runner_log_kb_per_phase + requests * run.lambda_log_kb_per_request
    log_kb += run.phases * run.flow_log_kb_per_phase * len(r.of("AWS::EC2::FlowLog"))
    lines.append(Line("CloudWatch Logs ingestion", 0, log_kb / 1024 / 1024 * p["logs_ingest_gb"] * k))
    traces = (requests - logs.requests if r.traced(api) else 0) + (logs.requests if r.traced(reader) else 0)
    traces += sum(
        n for n, service in ((run.scaler_invocations, "scaler"), (run.events_invocations, "events"))
        if r.traced(r.function(service))
    )  # fmt: skip
    lines.append(Line("X-Ray traces", 0, traces * p["xray_trace"] * k, "terrace:tracing" if traces else ""))
    metrics = r.custom_metrics()
    # a metric is billed for the hours it is published in: 1,000 runs a month touch nearly every hour
    hours = min(k, MONTH_HOURS) / MONTH_HOURS
    lines.append(Line("Custom metrics", 0, len(metrics) * p["custom_metric_month"] * hours, f"{len(metrics)} metrics"))
    derived = {"task_seconds_per_run": task_s, "api_requests_per_run": requests, "runner_requests_per_run": runner}
    derived |= {"runner_polls_per_run": polls}
    derived |= {
        "log_reads_per_run": logs.requests,
        "log_read_hold_s": hold_s(reader["Properties"]["Environment"]["Variables"]),
    }
    return lines, derived


def estimate(template: dict[str, Any], run: RunProfile = RunProfile(), idle: IdleProfile = IdleProfile()) -> list[Line]:
    r = Resources(template)
    return idle_lines(r, idle, run) + run_lines(r, run)[0]


def synthesize(context: dict[str, str] | None = None) -> dict[str, Any]:
    """The stack's template (default settings, or `context`), synthesized in-process (no bundling, no downloads)."""
    import os

    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    sys.path.insert(0, str(REPO))
    import aws_cdk as cdk

    from infra.app import build

    defaults = json.loads((REPO / "cdk.json").read_text())["context"]
    extra = {"terrace:skipBundling": "true", "terrace:nag": "false", **(context or {})}
    with tempfile.TemporaryDirectory() as outdir:
        app = cdk.App(outdir=outdir, context={**defaults, **extra})
        stack = build(app)
        app.synth()
        return json.loads((Path(outdir) / f"{stack.stack_name}.template.json").read_text())


def per_1000_runs(template: dict[str, Any], run: RunProfile) -> float:
    return sum(line.per_1000_runs for line in run_lines(Resources(template), run)[0])


def profile_lines(template: dict[str, Any]) -> list[str]:
    """Each profile's runs now, and as they were when a log read was held and read the whole log again (through
    CloudFront and the HTTP API to the api function)."""
    held = copy.deepcopy(template)
    for fn in Resources(held).functions().values():
        for name in ("TERRACE_LOG_READ_WAIT_S", "TERRACE_LOG_READ_URL"):
            fn["Properties"].get("Environment", {}).get("Variables", {}).pop(name, None)
    out = ["Per 1,000 runs by profile (bench/cost_catalog.py PROFILES):"]
    for name, run in PROFILES.items():
        before = per_1000_runs(held, replace(run, whole_log_reads=True))
        late = per_1000_runs(template, replace(run, late_apply_share=1.0))
        out.append(
            f"  {name:<14} ${per_1000_runs(template, run):.2f}  (${before:.2f} with log reads held, whole; "
            f"${late:.2f} when every apply is confirmed after its plan's runner left)"
        )
    return out


def render(template: dict[str, Any], run: RunProfile = RunProfile(), idle: IdleProfile = IdleProfile()) -> str:
    r = Resources(template)
    per_run, derived = run_lines(r, run)
    lines = idle_lines(r, idle, run) + per_run
    width = max(len(line.item) for line in lines)
    out = [
        f"Terrace on AWS, us-east-1 list prices as of {PRICES_AS_OF} (free tiers ignored, storage left out)",
        f"{'item':<{width}}  {'idle $/month':>12}  {'$/1,000 runs':>12}  note",
    ]
    for line in lines:
        if line.idle_month or line.per_1000_runs:
            out.append(f"{line.item:<{width}}  {line.idle_month:>12.2f}  {line.per_1000_runs:>12.2f}  {line.note}")
    idle_total, runs_total = sum(x.idle_month for x in lines), sum(x.per_1000_runs for x in lines)
    out.append(f"{'total':<{width}}  {idle_total:>12.2f}  {runs_total:>12.2f}")
    out.extend(profile_lines(template))
    if speculative := speculative_line(r, run):
        out.append(f"Runner time of {speculative}.")
    if window := window_line(r):
        out.append(f"{window}.")
    out.append("")
    out.append("Assumptions (bench/cost_catalog.py):")
    out.append("  a run: " + ", ".join(f"{k}={v}" for k, v in asdict(run).items()))
    out.append("  idle: " + ", ".join(f"{k}={v}" for k, v in asdict(idle).items()))
    out.append("  derived from the template: " + ", ".join(f"{k}={v:g}" for k, v in derived.items()))
    missing = unpriced(template)
    if missing:
        out.append("UNPRICED resource types (add them to bench/cost_catalog.py): " + ", ".join(sorted(missing)))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cost", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--template", type=Path, help="a synthesized template (default: synthesize now)")
    parser.add_argument("-c", "--context", action="append", default=[], help="key=value CDK context when synthesizing")
    parser.add_argument("--profile", choices=sorted(PROFILES), default="terrace", help="the run the table prices")
    args = parser.parse_args(argv)
    context = dict(item.split("=", 1) for item in args.context)
    template = json.loads(args.template.read_text()) if args.template else synthesize(context)
    print(render(template, PROFILES[args.profile]))
    return 1 if unpriced(template) else 0


if __name__ == "__main__":
    sys.exit(main())
