"""A model of the first run on AWS (`python -m bench.first_run`): from the CLI's configuration-version request to
the runner's first log line, cold (no runner of the organization alive) and warm (one polling), segment by segment,
beside HCP Terraform's figure.

Each segment is measured here or cited with its source, and says which:
- measured here: Terrace's share (the scaler's tick that starts the runner: its table work, `ListTasks` and
  `RunTask` on moto's ECS, in this process); the runner process's start to its first request (`python -m
  terrace.runner` against a local stub, this machine's Python, bytecode cached as in the image); the image's
  size (`bench.runner_image`: the Python layer measured, the rest estimated when there is no Docker daemon) and its
  layer count (the final stage of runner-container/Dockerfile);
- cited: Fargate's provisioning (placement, the task's network interface) and ECR pull throughput, which no machine
  here can measure, from the sources named in `CITED`.
The api's answer and the scaler's invocation overlap the CLI's upload (the runner is started when the
configuration version is created: `Scaler.expect`), so they count only where they exceed it.

The warm window (`services/runs/warm_window.py`) adds a second path: `terraform init` reads the workspace, which
starts a runner of plans for the organization; when the plan comes at least a runner's start later (CI pipelines run
init, then plan; init downloads providers), the runner already polls every half second (`WARM_POLL_S`).
Measured here: the
read that signals (with and without the window, the signal's wake a slow call as an invoke is on AWS), the tick that
starts the window's runner on moto's ECS; the rest is cited or set. `window_cost` prices a window with
`bench.cost_catalog`'s list prices.
"""

from __future__ import annotations

import http.server
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
HCP = (10.0, 30.0)  # HCP Terraform, plan start after `terraform apply`: the figure issue 44 compares with
CITED = {
    "fargate": (8.0, 15.0, "Fargate placement and network interface before the pull: issue 44's review of a "
                "deployment (AWS publishes no figure; the ECS guide's 'Fargate task launch' pages name the pull as "
                "the part an image controls)"),  # fmt: skip
    "pull_mb_s": (15.0, 40.0, "ECR pull and extraction on Fargate, MB/s of compressed image: issue 44's review "
                  "(4-10 s for ~125 MB; docs/performance.md); SOCI lazy loading 'up to 50-60% faster' task starts "
                  "for images of 250 MB and more (AWS News Blog, 'AWS Fargate Enables Faster Container Startup "
                  "using Seekable OCI', 2023; re:Invent 2023 CON307); zstd layers 'up to 27%' (AWS, in the ECS "
                  "roadmap issue on Fargate launch times)"),  # fmt: skip
    "first_line": (0.3, 1.0, "claim, configuration download and terraform's first output line: the local "
                   "pick-up bench (docs/performance.md: claim 6.5 ms; init's first line follows its start)"),
}  # fmt: skip


def runner_start_s(repeat: int = 3) -> float:
    """Median seconds from `python -m terrace.runner` to its first request (the enrollment), against a stub."""
    seen: list[float] = []

    class Stub(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            seen.append(time.monotonic())
            self.send_response(401)  # refused: the runner exits
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Stub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {"PATH": os.environ.get("PATH", ""), "HOME": "/tmp", "TERRACE_RUNNER_WAIT_S": "0"}
    env |= {"TERRACE_API_URL": f"http://127.0.0.1:{server.server_port}", "TERRACE_RUNNER_ENROLLMENT_CODE": "x"}
    times = []
    try:
        for _ in range(repeat):
            seen.clear()
            started = time.monotonic()
            process = subprocess.Popen([sys.executable, "-m", "terrace.runner"], env=env, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)  # fmt: skip
            try:
                process.wait(timeout=60)
            finally:
                if process.poll() is None:
                    process.kill()
                    process.wait()
            if seen:
                times.append(seen[0] - started)
    finally:
        server.shutdown()
        server.server_close()
    return statistics.median(times)


def scaler_tick_s(repeat: int = 3, window: bool = False) -> float:
    """Median seconds of the scaler's tick that starts an expected organization's runner (`window`: a warm window's
    runner for an organization whose workspace was opened): its table work in memory, `ListTasks` and `RunTask` on
    moto's ECS (in this process)."""
    import boto3
    from moto import mock_aws
    from terrace.adapters.ecs_runner_launcher import EcsLauncher
    from terrace.bootstrap import build_memory
    from terrace.config import Settings

    times = []
    with mock_aws():
        ecs, ec2 = boto3.client("ecs", region_name="us-east-1"), boto3.client("ec2", region_name="us-east-1")
        vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        ec2.modify_vpc_attribute(VpcId=vpc, EnableDnsHostnames={"Value": True})
        subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.1.0/24")["Subnet"]["SubnetId"]
        group = ec2.create_security_group(GroupName="runners", Description="runners", VpcId=vpc)["GroupId"]
        ecs.create_cluster(clusterName="terrace")
        arn = ecs.register_task_definition(
            family="terrace-runner", networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="512",
            memory="2048", containerDefinitions=[{"name": "runner", "image": "runner", "memory": 2048}],
        )["taskDefinition"]["taskDefinitionArn"]  # fmt: skip
        for n in range(repeat):
            settings = Settings(table_name="memory", blob_bucket="memory", url_signing_secret="s", max_runners=50,
                                warm_window_minutes=15)  # fmt: skip
            container = build_memory(settings)
            launcher = EcsLauncher(ecs, "terrace", arn, [subnet], [group], False, "runner")
            container.launcher = container.scaler.launcher = launcher
            started = time.perf_counter()
            summary = container.scaler.scale_once(**({"warm": [f"org{n}"]} if window else {"expect": [f"org{n}"]}))
            times.append(time.perf_counter() - started)
            assert summary["window" if window else "started"] == {f"org{n}": 1}, summary
    return statistics.median(times)


def signal_read_ms(repeat: int = 40) -> tuple[float, float]:
    """Median milliseconds of `GET /organizations/:org/workspaces/:name` by a user, without the warm window and with
    it, every read signalling (the once-a-minute rule off) and the wake a 50 ms call (an async Lambda invoke)."""
    from fastapi.testclient import TestClient
    from terrace.bootstrap import build_memory
    from terrace.config import Settings
    from terrace.domain.principal import PrincipalKind
    from terrace.services.runs import warm_window
    from terrace.web.app import create_app

    medians = []
    for minutes in (0, 15):
        container = build_memory(
            Settings(table_name="memory", blob_bucket="memory", url_signing_secret="s", warm_window_minutes=minutes)
        )
        container.scaler_kick = lambda **_kwargs: time.sleep(0.05)
        user = container.accounts.create_user("alice", "alice@example.com")
        token = container.accounts.issue_token(PrincipalKind.USER, user.id).secret
        client = TestClient(create_app(container))
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/vnd.api+json"}
        org = {"data": {"type": "organizations", "attributes": {"name": "acme", "email": "a@example.com"}}}
        client.post("/api/v2/organizations", headers=headers, json=org)
        ws = {"data": {"type": "workspaces", "attributes": {"name": "app", "execution-mode": "remote"}}}
        client.post("/api/v2/organizations/acme/workspaces", headers=headers, json=ws)
        every, warm_window.SIGNAL_EVERY_S = warm_window.SIGNAL_EVERY_S, 0
        times = []
        try:
            for _ in range(repeat):
                started = time.perf_counter()
                assert client.get("/api/v2/organizations/acme/workspaces/app", headers=headers).status_code == 200
                times.append((time.perf_counter() - started) * 1000)
        finally:
            warm_window.SIGNAL_EVERY_S = every
        medians.append(statistics.median(times))
    return medians[0], medians[1]


def image() -> tuple[float, int]:
    """(compressed MB pulled, layers of the final stage) of the runner image."""
    from bench.runner_image import built_size, docker_available, estimate

    result = built_size() if docker_available() else estimate()
    final = (REPO / "runner-container" / "Dockerfile").read_text().rsplit("\nFROM ", 1)[1]
    layers = sum(1 for line in final.splitlines() if line.split(" ", 1)[0] in ("RUN", "COPY", "ADD"))
    return float(result.get("compressed_mb") or result["on_disk_mb"] / 3), layers


def model(
    tick_s: float, start_s: float, image_mb: float, logs_cold_s: float | None = None
) -> list[tuple[str, float, float, str]]:
    """(segment, low s, high s, source) of a cold first run; the warm one is the last row's kind. `logs_cold_s`: the
    logs function's cold start, which the CLI's first log read (as the run is queued) pays while the runner starts."""
    low_mb_s, high_mb_s, pull = CITED["pull_mb_s"]
    fargate, first_line = CITED["fargate"], CITED["first_line"]
    rows = [
        ("scaler tick: tables, ListTasks, RunTask (moto)", tick_s, tick_s, "measured here"),
        ("Fargate provisioning", fargate[0], fargate[1], f"cited: {fargate[2]}"),
        (f"image pull, {image_mb:.0f} MB compressed", image_mb / high_mb_s, image_mb / low_mb_s, f"cited: {pull}"),
        ("runner start to first request", start_s, start_s, "measured here"),
    ]
    if logs_cold_s is not None:
        source = f"measured here: {logs_cold_s:.2f} s (bench.logs_cold_start), within the runner's start"
        rows.append(("the logs function's cold start (the CLI's first log read)", 0.0, 0.0, source))
    rows.append(("claim to terraform's first line", first_line[0], first_line[1], f"cited: {first_line[2]}"))
    return rows


def render(rows: list[tuple[str, float, float, str]], layers: int) -> str:
    width = max(len(r[0]) for r in rows)
    out = [f"First run on AWS, configuration version -> first log line (runner image: {layers} layers of its own)"]
    out += [f"  {name:<{width}}  {low:6.2f}-{high:6.2f} s  {source}" for name, low, high, source in rows]
    cold = (sum(r[1] for r in rows), sum(r[2] for r in rows))
    warm_poll = (0.0, 2.0)  # an idle runner polls every 2 s (0.5 s for 10 s after its start or last job)
    warm = (warm_poll[0] + rows[-1][1], warm_poll[1] + rows[-1][2])
    out.append(f"  {'cold total':<{width}}  {cold[0]:6.2f}-{cold[1]:6.2f} s  (target: 10 s)")
    out.append(f"  {'warm total (a runner polling)':<{width}}  {warm[0]:6.2f}-{warm[1]:6.2f} s  (target: 2 s)")
    out.append(f"  {'HCP Terraform':<{width}}  {HCP[0]:6.2f}-{HCP[1]:6.2f} s  (issue 44)")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    from terrace.adapters.runner_launcher import WARM_POLL_S

    from bench.first_run_vcs import render_vcs
    from bench.logs_cold_start import measure
    from bench.warm_window import render_window, window_cost, window_rows

    size, layers = image()
    logs_cold = measure()["total_s"]
    cold = model(scaler_tick_s(), runner_start_s(), size, logs_cold)
    print(render(cold, layers))
    to_poll = (sum(r[1] for r in cold[:-1]), sum(r[2] for r in cold[:-1]))  # a runner started, until it polls
    minutes = 15  # infra/settings.py: terrace:warmWindowMinutes
    rows = window_rows(WARM_POLL_S, CITED["first_line"], logs_cold)
    cost = window_cost(minutes, WARM_POLL_S, 220, warm_up_s=logs_cold)
    print(render_window(rows, to_poll, cost, minutes, logs_cold))
    print(render_vcs(to_poll, (cold[-1][1], cold[-1][2])))
    plain, signalled = signal_read_ms()
    print(f"  measured here: the workspace read that signals {signalled:.1f} ms, without the window {plain:.1f} ms "
          f"(median; its wake a 50 ms call, off the request's thread); the tick that starts the window's runner "
          f"{scaler_tick_s(window=True):.3f} s (moto's ECS)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
