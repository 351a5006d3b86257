"""The warm window's part of `python -m bench.first_run`: the first run when `terraform init` read the workspace
some seconds before `terraform plan` (its runner started then), and what a window costs.

Every segment is measured here (`bench.first_run`), set in the code (the warm runner's poll), or cited with its
source; the prices are `bench.cost_catalog`'s list prices at the stack's default runner size."""

from __future__ import annotations

from dataclasses import dataclass

from bench.cost_catalog import PRICES, RunProfile

Row = tuple[str, float, float, str]
UPLOAD = (0.1, 0.5, "the CLI's configuration upload and run creation with a runner already polling: 0.11 s on the "
          "embedded server (docs/performance.md, pick-up bench: upload start -> plan running); on AWS ~20 table "
          "calls at DynamoDB's single-digit milliseconds and the API Lambda's own time")  # fmt: skip
SPOT_ARM = ("Fargate Spot for ARM64 tasks: AWS What's New, 2024-09, 'Amazon ECS now supports AWS Graviton-based "
            "Spot compute with AWS Fargate'; 'up to 70%' below Fargate (AWS Fargate pricing)")  # fmt: skip


def logs_cold_row(logs_cold_s: float) -> Row:
    """The logs function's cold start: the window's opening warms it up (`functions/logs/handler.py: WARM_UP`), so
    the CLI's first log read finds it started."""
    source = f"measured here: {logs_cold_s:.2f} s (bench.logs_cold_start), done as the window opened (a warm-up)"
    return ("the logs function's cold start (the CLI's first log read)", 0.0, 0.0, source)


def without_warm_up(rows: list[Row], logs_cold_s: float) -> tuple[float, float]:
    """The warm path had the logs function not been warmed up: the CLI's first read (as the run is queued) waits
    for its start, which hides the runner's pick-up up to then."""
    upload, runner = rows[0], rows[1:3]
    return (upload[1] + max(sum(r[1] for r in runner), logs_cold_s), upload[2] + max(sum(r[2] for r in runner),
            logs_cold_s))  # fmt: skip


def window_rows(poll_s: float, first_line: tuple[float, float, str], logs_cold_s: float | None = None) -> list[Row]:
    """The first run from the configuration version to the first log line with the window's runner already polling;
    `logs_cold_s`: the logs function's cold start, where it lies on the way (a warm one adds nothing)."""
    rows = [
        ("upload and run creation (the runner already polls)", UPLOAD[0], UPLOAD[1], f"cited: {UPLOAD[2]}"),
        (
            f"wait for the warm runner's next poll (every {poll_s:g} s)",
            0.0,
            poll_s,
            "set here: WARM_POLL_S (adapters/runner_launcher.py)",
        ),  # fmt: skip
        ("claim to terraform's first line", first_line[0], first_line[1], f"cited: {first_line[2]}"),
    ]
    if logs_cold_s is not None:
        rows.append(logs_cold_row(logs_cold_s))
    return rows


def lead_table(
    to_poll: tuple[float, float], warm: tuple[float, float], first_line: tuple[float, float], leads: tuple[int, ...]
) -> list[str]:
    """The first line when init read the workspace `lead` seconds before the configuration version: the runner,
    started then, asks for a job `to_poll` after it; still starting when the run is queued, it claims the plan at
    once (the cold path, shortened by `lead`), else the path is the warm one's."""
    out = []
    for lead in leads:
        low, high = (to_poll[i] - lead + first_line[i] if to_poll[i] - lead > UPLOAD[i] else warm[i] for i in (0, 1))
        out.append(f"    init {lead:>2} s before the plan: {low:6.2f}-{high:6.2f} s")
    return out


@dataclass(frozen=True)
class WindowCost:
    per_window: float
    fargate: float
    ipv4: float
    polls: float
    warm_up: float  # the logs function's warm-up: one invocation, a cold start's duration
    month: float  # `windows_a_month` of them
    always_on_month: float  # terrace:warmRunners=1 for one organization, for comparison


def window_cost(
    minutes: int,
    poll_s: float,
    windows_a_month: int,
    vcpu: float = 0.5,
    mem_gb: float = 2.0,
    api_gb: float = 1.0,
    warm_up_s: float = 1.2,
) -> WindowCost:
    """One window of `minutes` on Fargate Spot (ARM, the stack's runner size), its public IPv4, its polls (each a
    request through CloudFront, the HTTP API and the API Lambda with its table reads) and the logs function's
    warm-up (one invocation of `warm_up_s`, its cold start, at 1 GB)."""
    p, run = PRICES, RunProfile()
    hour = vcpu * p["fargate_arm_vcpu_h"] + mem_gb * p["fargate_arm_gb_h"]
    per_poll = p["lambda_request"] + run.api_ms / 1000 * api_gb * p["lambda_arm_gb_s"] + p["http_api_request"]
    per_poll += p["cloudfront_https_request"] + run.ddb_reads_per_request * p["ddb_read_request_unit"]
    hours = minutes / 60
    fargate = hours * hour * (1 - p["fargate_spot_discount"])
    ipv4 = hours * p["public_ipv4_h"]
    polls = minutes * 60 / poll_s * per_poll
    warm_up = p["lambda_request"] + warm_up_s * 1.0 * p["lambda_arm_gb_s"]
    per_window = fargate + ipv4 + polls + warm_up
    always = 720 * (hour + p["public_ipv4_h"]) + 720 * 3600 / run.runner_poll_s * per_poll
    return WindowCost(per_window, fargate, ipv4, polls, warm_up, per_window * windows_a_month, always)


def render_window(
    rows: list[Row], cold_to_poll: tuple[float, float], cost: WindowCost, minutes: int, logs_cold_s: float | None = None
) -> str:
    width = max(len(r[0]) for r in rows)
    out = ["", "With the warm window: `terraform init` read the workspace at least a runner's start before the plan"]
    out += [f"  {name:<{width}}  {low:6.2f}-{high:6.2f} s  {source}" for name, low, high, source in rows]
    warm = (sum(r[1] for r in rows), sum(r[2] for r in rows))
    out.append(f"  {'warm-window total':<{width}}  {warm[0]:6.2f}-{warm[1]:6.2f} s  (target: 2 s)")
    if logs_cold_s is not None:
        before = without_warm_up(rows, logs_cold_s)
        out.append(f"  {'(the logs function not warmed up)':<{width}}  {before[0]:6.2f}-{before[1]:6.2f} s")
    out.append("  init, then plan, with less time between (the runner is still starting):")
    first = next(r for r in rows if r[0].startswith("claim to"))
    out += lead_table(cold_to_poll, warm, (first[1], first[2]), (0, 5, 10, 15, 20, 30))
    out += [
        "",
        f"A window of {minutes} min (one runner of plans on Fargate Spot, ARM 0.5 vCPU / 2 GB; {SPOT_ARM}):",
        f"  Fargate Spot ${cost.fargate:.4f} + public IPv4 ${cost.ipv4:.4f} + polls ${cost.polls:.4f}"
        f" + the logs function's warm-up ${cost.warm_up:.5f} = ${cost.per_window:.4f} per window",
        f"  ten bursts a working day (220 windows a month): ${cost.month:.2f} a month"
        f" (terrace:warmRunners=1, one runner all month: ${cost.always_on_month:.2f})",
    ]
    return "\n".join(out)
