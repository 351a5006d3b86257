"""What a deployed Terrace costs: idle per month, and per 1,000 runs.

Prices the resources of the synthesized CloudFormation template (`python -m bench.cost` synthesizes it
in-process, without bundling; `--template cdk.out/Terrace.template.json` reads a synthesized one) with
the us-east-1 list prices below. Free tiers are ignored (a first-year account pays less).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent

# us-east-1 on-demand list prices in USD, as published on the AWS pricing pages (recorded 2025-06, the latest
# the authors could read; this machine is offline). Update PRICES_AS_OF with the numbers.
PRICES_AS_OF = "2025-06"
PRICES = {
    "lambda_arm_gb_s": 0.0000133334,
    "lambda_request": 0.20 / 1e6,
    "fargate_arm_vcpu_h": 0.03238,
    "fargate_arm_gb_h": 0.00356,
    "public_ipv4_h": 0.005,
    "interface_endpoint_az_h": 0.01,
    "ddb_write_request_unit": 0.625 / 1e6,
    "ddb_read_request_unit": 0.125 / 1e6,
    "s3_put": 0.005 / 1000,
    "s3_get": 0.0004 / 1000,
    "sqs_request": 0.40 / 1e6,
    "http_api_request": 1.00 / 1e6,
    "cloudfront_https_request": 0.01 / 10000,
    "logs_ingest_gb": 0.50,
    "alarm_month": 0.10,
    "dashboard_month": 3.00,
    "kms_key_month": 1.00,
    "secret_month": 0.40,
    "secrets_api_call": 0.05 / 10000,
    "ecr_gb_month": 0.10,
    "xray_trace": 5.00 / 1e6,
}
MONTH_MINUTES = 30 * 24 * 60


@dataclass(frozen=True)
class RunProfile:
    """What one run does (a plan and an apply). Round numbers from the design; edit to taste."""

    phases: int = 2
    phase_seconds: int = 60  # Fargate time of one phase, image pull included
    client_requests: int = 100  # terraform/tofu calls: uploads, run creation, status and log polling
    runner_requests_per_phase: int = 20  # next (claim), ~6 heartbeats, log chunks, finish
    runner_poll_s: float = 2.0  # an idle runner asks /jobs/next this often (short polls: no Lambda held waiting)
    api_ms: int = 60  # average api Lambda duration per request
    ddb_reads_per_request: float = 2.0
    ddb_writes_per_request: float = 0.6
    s3_puts: int = 6  # configuration, state, plan, plan JSON, two log archives
    s3_gets: int = 6
    events_sqs_requests_per_run: int = 4  # status-change and state events (jobs queue in the table)
    scaler_invocations: int = 2  # on enqueue
    events_invocations: int = 2
    log_kb_per_phase: int = 200
    lambda_log_kb_per_request: float = 1.0


@dataclass(frozen=True)
class Line:
    item: str
    idle_month: float
    per_1000_runs: float
    note: str = ""


class Resources:
    """The facts of a template the estimate needs."""

    def __init__(self, template: dict[str, Any]) -> None:
        self.resources = template["Resources"]

    def of(self, resource_type: str) -> list[dict[str, Any]]:
        return [r for r in self.resources.values() if r["Type"] == resource_type]

    def function(self, service_name: str) -> dict[str, Any]:
        for fn in self.of("AWS::Lambda::Function"):
            props = fn["Properties"]
            if props.get("Environment", {}).get("Variables", {}).get("POWERTOOLS_SERVICE_NAME") == service_name:
                return dict(props)
        raise KeyError(service_name)

    def memory_gb(self, service_name: str) -> float:
        return int(self.function(service_name).get("MemorySize", 128)) / 1024

    def task(self) -> tuple[float, float, int]:
        [task] = self.of("AWS::ECS::TaskDefinition")
        props = task["Properties"]
        assert props["RuntimePlatform"]["CpuArchitecture"] == "ARM64", "prices below are for arm64"
        env = {e["Name"]: e["Value"] for e in props["ContainerDefinitions"][0]["Environment"]}
        return int(props["Cpu"]) / 1024, int(props["Memory"]) / 1024, int(env.get("TERRACE_RUNNER_IDLE_EXIT_S", 0))

    def public_runners(self) -> bool:
        return any(s["Properties"].get("MapPublicIpOnLaunch") for s in self.of("AWS::EC2::Subnet"))


def estimate(template: dict[str, Any], run: RunProfile = RunProfile()) -> list[Line]:
    p, r = PRICES, Resources(template)
    lines: list[Line] = []
    per_k = 1000

    # Always there, used or not.
    lines.append(Line("KMS key", len(r.of("AWS::KMS::Key")) * p["kms_key_month"], 0))
    lines.append(Line("Secrets Manager secrets", len(r.of("AWS::SecretsManager::Secret")) * p["secret_month"], 0))
    lines.append(Line("CloudWatch alarms", len(r.of("AWS::CloudWatch::Alarm")) * p["alarm_month"], 0))
    lines.append(
        Line("CloudWatch dashboard", len(r.of("AWS::CloudWatch::Dashboard")) * p["dashboard_month"], 0, "free if <3")
    )
    endpoints = [e for e in r.of("AWS::EC2::VPCEndpoint") if e["Properties"].get("VpcEndpointType") == "Interface"]
    azs = len(r.of("AWS::EC2::Subnet"))
    lines.append(
        Line("Interface endpoints", len(endpoints) * azs * p["interface_endpoint_az_h"] * 720, 0, "private option")
    )
    lines.append(Line("ECR image (~0.3 GB)", 0.3 * p["ecr_gb_month"], 0))

    # Schedules: scaler and reaper every minute, each a short invocation that reads queues / the table.
    ticks = len(r.of("AWS::Events::Rule")) * MONTH_MINUTES
    tick_gb_s = ticks * 0.2 * (r.memory_gb("terrace-scaler") + r.memory_gb("terrace-reaper")) / 2
    lines.append(Line("Scheduled scaler + reaper", ticks * p["lambda_request"] + tick_gb_s * p["lambda_arm_gb_s"], 0))
    idle_requests = MONTH_MINUTES * 4 * p["sqs_request"] + MONTH_MINUTES * 3 * p["ddb_read_request_unit"]
    idle_logs = ticks * 1.0 / 1024 / 1024 * p["logs_ingest_gb"]
    lines.append(Line("  their SQS/DynamoDB reads + logs", idle_requests + idle_logs, 0))
    # Lambda's event source mapping long-polls the events queue (5 pollers, 20 s polls) all month.
    pollers = len(r.of("AWS::Lambda::EventSourceMapping")) * 5 * 3 * MONTH_MINUTES
    lines.append(Line("Events queue polling", pollers * p["sqs_request"], 0))

    # Per run.
    vcpu, mem_gb, idle_tail_s = r.task()
    task_seconds = run.phases * (run.phase_seconds + idle_tail_s)
    fargate = task_seconds / 3600 * (vcpu * p["fargate_arm_vcpu_h"] + mem_gb * p["fargate_arm_gb_h"])
    lines.append(Line(f"Fargate arm64 {vcpu:g} vCPU/{mem_gb:g} GB", 0, fargate * per_k, f"{task_seconds}s/run"))
    if r.public_runners():
        lines.append(Line("Runner public IPv4", 0, task_seconds / 3600 * p["public_ipv4_h"] * per_k))
    idle_polls = run.phases * idle_tail_s / run.runner_poll_s  # a runner's polls until it idles out
    requests = int(run.client_requests + run.phases * run.runner_requests_per_phase + idle_polls)
    api_gb_s = requests * run.api_ms / 1000 * r.memory_gb("terrace-api")
    side_gb_s = (run.scaler_invocations + run.events_invocations) * 0.2 * r.memory_gb("terrace-scaler")
    lambda_cost = (requests + run.scaler_invocations + run.events_invocations) * p["lambda_request"]
    lambda_cost += (api_gb_s + side_gb_s) * p["lambda_arm_gb_s"]
    lines.append(Line("Lambda (api, scaler, events)", 0, lambda_cost * per_k, f"{requests} API requests/run"))
    lines.append(Line("HTTP API", 0, requests * p["http_api_request"] * per_k))
    lines.append(Line("CloudFront requests", 0, requests * p["cloudfront_https_request"] * per_k))
    ddb = requests * (
        run.ddb_reads_per_request * p["ddb_read_request_unit"]
        + run.ddb_writes_per_request * p["ddb_write_request_unit"]
    )
    lines.append(Line("DynamoDB on-demand", 0, ddb * per_k))
    lines.append(Line("S3 requests", 0, (run.s3_puts * p["s3_put"] + run.s3_gets * p["s3_get"]) * per_k))
    sqs = run.events_sqs_requests_per_run * p["sqs_request"]
    lines.append(Line("SQS requests (events)", 0, sqs * per_k))
    log_gb = (run.phases * run.log_kb_per_phase + requests * run.lambda_log_kb_per_request) / 1024 / 1024
    lines.append(Line("CloudWatch Logs ingestion", 0, log_gb * p["logs_ingest_gb"] * per_k))
    lines.append(Line("X-Ray traces", 0, requests * p["xray_trace"] * per_k, "every request sampled"))
    return lines


def synthesize() -> dict[str, Any]:
    """The default stack's template, synthesized in-process (no bundling, no downloads)."""
    import os

    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    sys.path.insert(0, str(REPO))
    import aws_cdk as cdk

    from infra.app import build

    context = json.loads((REPO / "cdk.json").read_text())["context"]
    with tempfile.TemporaryDirectory() as outdir:
        app = cdk.App(outdir=outdir, context={**context, "terrace:skipBundling": "true", "terrace:nag": "false"})
        stack = build(app)
        app.synth()
        return json.loads((Path(outdir) / f"{stack.stack_name}.template.json").read_text())


def render(lines: list[Line]) -> str:
    width = max(len(line.item) for line in lines)
    out = [
        f"Terrace on AWS, us-east-1 list prices as of {PRICES_AS_OF} (free tiers ignored)",
        f"{'item':<{width}}  {'idle $/month':>12}  {'$/1,000 runs':>12}  note",
    ]
    for line in lines:
        if line.idle_month or line.per_1000_runs:
            out.append(f"{line.item:<{width}}  {line.idle_month:>12.2f}  {line.per_1000_runs:>12.2f}  {line.note}")
    idle, runs = sum(x.idle_month for x in lines), sum(x.per_1000_runs for x in lines)
    out.append(f"{'total':<{width}}  {idle:>12.2f}  {runs:>12.2f}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cost", description=__doc__.splitlines()[0])
    parser.add_argument("--template", type=Path, help="a synthesized template (default: synthesize now)")
    args = parser.parse_args(argv)
    template = json.loads(args.template.read_text()) if args.template else synthesize()
    print(render(estimate(template)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
