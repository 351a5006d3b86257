"""The API Lambda's cold start: importing `functions/api/handler.py` and serving its first request, in a fresh
interpreter, against importing FastAPI, Mangum, boto3 and pydantic alone (what any FastAPI-on-Lambda pays).

Each repetition is a new `python` process (no warm bytecode of the run before counts for more than on Lambda:
both sides read the same `.pyc` files). The handler's process has the API function's environment (Lambda's
variables, tracing on as the CDK app deploys it) and the table, bucket and queues of `definitions.py` on a moto
server this process runs; its first request is an authenticated `GET /api/v2/account/details` in an HTTP API
(payload 2.0) event, through Mangum like on AWS. Both sides time themselves from their first import on, so the
interpreter's own start-up (the same for both) is left out. Each side also reports the CPU time it spent (less
sensitive to a loaded machine than wall time; the moto server runs in this process, not theirs). Target: the
handler's cold start within 1.3x.

Why paired: the ratio of two medians taken from independent distributions is as noisy as the machine (on one idle
machine the baseline's median alone moved 477-673 ms between runs, and three runs of the same code gave 1.16x,
1.27x and 1.51x). So the repetitions are pairs, a baseline interpreter and then a handler interpreter right after
it, each pair under the same load, and the headline is the median of the pairs' own ratios (wall and CPU) and of
their own differences (the overhead, in ms), with the spread of those ratios (first to third quartile) beside it.
Both sides get the same warm-up (pairs run first and left out: the page cache holds both sides' files) and the
same number of interpreters; the medians of each side are printed beside the paired figures.

Both sides add up the CPU time the garbage collector took. The handler turns it off on Lambda until its first
invocation ends (`functions/api/handler.py`), which saves the collections of the imports the baseline makes too; the
CPU overhead with the baseline's collections added back is Terrace's own work, printed beside the headline.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from bench.common import Outcome, Size, median, percentile

ROOT = Path(__file__).resolve().parents[1]
HANDLER = ROOT / "functions" / "api" / "handler.py"
TARGET_RATIO = 1.3
REPETITIONS, QUICK_REPETITIONS, WARMUP_PAIRS = 21, 7, 2  # the smoke size: one pair, no warm-up

# Both sides add up the CPU time the garbage collector took (the handler turns it off on Lambda for its cold start).
COLLECTOR = """
import gc, time
collector = {"s": 0.0, "at": 0.0}
def timed(phase, info):
    if phase == "start":
        collector["at"] = time.process_time()
    else:
        collector["s"] += time.process_time() - collector["at"]
gc.callbacks.append(timed)
"""

BASELINE = (
    COLLECTOR
    + """
import json, os, sys, time
start, cpu = time.perf_counter(), time.process_time()
import fastapi, mangum, boto3, pydantic
with os.fdopen(int(sys.argv[1]), "w") as out:
    out.write(json.dumps({"import_s": time.perf_counter() - start, "cpu_s": time.process_time() - cpu,
        "gc_s": collector["s"]}))
"""
)

# The handler, loaded as Lambda loads it, then one request; the timings go out on fd 3 (Powertools' metrics and
# logs are printed to stdout, as on Lambda) to the descriptor named last.
COLD = (
    COLLECTOR
    + """
import importlib.util, json, os, sys, time
start, cpu = time.perf_counter(), time.process_time()
spec = importlib.util.spec_from_file_location("handler", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
imported = time.perf_counter()
event = json.loads(sys.argv[2])
context = type("Context", (), {"function_name": "terrace-api", "memory_limit_in_mb": 1024,
    "aws_request_id": "r-1", "invoked_function_arn": "arn:aws:lambda:us-east-1:123456789012:function:terrace-api",
    "get_remaining_time_in_millis": lambda self: 29000})()
response = module.lambda_handler(event, context)
served, cpu = time.perf_counter(), time.process_time() - cpu
heavy = sorted(m for m in ("aws_xray_sdk", "moto", "aws_cdk", "uvicorn", "regopy", "authlib") if m in sys.modules)
with os.fdopen(int(sys.argv[3]), "w") as out:
    out.write(json.dumps({"import_s": imported - start, "first_request_s": served - imported,
        "cpu_s": cpu, "status": response["statusCode"], "loaded": heavy, "gc_s": collector["s"]}))
"""
)


def api_gateway_event(path: str, token: str) -> dict[str, Any]:
    """An HTTP API (payload format 2.0) event as API Gateway hands it to the function behind CloudFront."""
    return {
        "version": "2.0", "routeKey": "$default", "rawPath": path, "rawQueryString": "", "isBase64Encoded": False,
        "headers": {"host": "terrace.example.com", "authorization": f"Bearer {token}",
                    "accept": "application/vnd.api+json", "user-agent": "go-tfe"},
        "requestContext": {
            "http": {"method": "GET", "path": path, "sourceIp": "192.0.2.1", "protocol": "HTTP/1.1",
                     "userAgent": "go-tfe"},
            "requestId": "r-1", "stage": "$default", "domainName": "terrace.example.com", "accountId": "123456789012",
            "apiId": "api", "domainPrefix": "terrace", "time": "26/Nov/2026:09:00:00 +0000", "timeEpoch": 0,
        },
    }  # fmt: skip


def lambda_environment(endpoint: str, resources_env: dict[str, str]) -> dict[str, str]:
    """The API function's environment (infra/lambdas.py, infra/stack.py) with moto's endpoint and credentials."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TERRACE_", "POWERTOOLS_", "AWS_"))}
    env.update(resources_env)
    env.update(
        {
            "AWS_LAMBDA_FUNCTION_NAME": "terrace-api",
            "AWS_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_SESSION_TOKEN": "testing",
            "POWERTOOLS_SERVICE_NAME": "terrace-api",
            "POWERTOOLS_METRICS_NAMESPACE": "Terrace",
            "POWERTOOLS_LOG_LEVEL": "INFO",
            "TERRACE_AWS_ENDPOINT_URL": endpoint,
            "TERRACE_PUBLIC_URL": "https://terrace.example.com",
            "TERRACE_URL_SIGNING_SECRET": "bench-signing-secret",
        }
    )
    return env


def layer_copy(into: Path) -> Path:
    """The terrace package as the layer ships it: with bytecode for its Python, checked by hash only
    (infra/bundling.py: compile_bytecode), since Lambda's /opt is read-only and a module without it is compiled
    at every cold start."""
    site = into / "python"
    shutil.copytree(ROOT / "layers" / "terrace", site / "terrace", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "--invalidation-mode", "unchecked-hash", str(site)], check=True
    )
    return site


def seed(endpoint: str) -> tuple[dict[str, str], str]:
    """The resources of definitions.py on moto and an admin token; (their TERRACE_* variables, the token)."""
    from terrace.bootstrap import build_aws
    from terrace.config import Settings
    from terrace.local.seed import seed_admin
    from terrace.wiring.local_resources import create_resources

    resources = create_resources(endpoint, f"cold{uuid.uuid4().hex[:6]}")  # moto's backends outlive a server
    settings = Settings(**resources.settings_fields(), aws_endpoint_url=endpoint, url_signing_secret="bench")
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    seeded = seed_admin(build_aws(settings), "cold")
    return resources.env(), seeded.token


def run_fresh(script: str, *args: str, env: dict[str, str]) -> dict[str, Any]:
    """Run `script` in a new interpreter; its JSON result comes back on a pipe whose descriptor it is given last."""
    read, write = os.pipe()
    with os.fdopen(read) as reader:
        try:
            process = subprocess.Popen(
                [sys.executable, "-c", script, *args, str(write)],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                pass_fds=(write,),
                text=True,
            )
        finally:
            os.close(write)
        result = reader.read()
        _, err = process.communicate(timeout=120)
    if process.returncode != 0:
        raise RuntimeError(f"a fresh interpreter failed ({process.returncode}):\n{err[-3000:]}")
    found: dict[str, Any] = json.loads(result)
    return found


def paired(baseline: list[dict[str, Any]], cold: list[dict[str, Any]]) -> dict[str, float]:
    """The pairs' figures: each pair's ratio and overhead (handler minus baseline), wall and CPU, and their medians;
    the first and third quartiles of the wall ratio; the CPU overhead with the baseline's garbage collection added
    back (what Terrace's own work costs, the collector's share left out of both sides); the medians of each side."""
    totals = [c["import_s"] + c["first_request_s"] for c in cold]
    ratios = [t / b["import_s"] for t, b in zip(totals, baseline, strict=True)]
    cpu_ratios = [c["cpu_s"] / b["cpu_s"] for c, b in zip(cold, baseline, strict=True)]
    return {
        "ratio": median(ratios),
        "ratio_p25": percentile(ratios, 25),
        "ratio_p75": percentile(ratios, 75),
        "cpu_ratio": median(cpu_ratios),
        "overhead_s": median([t - b["import_s"] for t, b in zip(totals, baseline, strict=True)]),
        "cpu_overhead_s": median([c["cpu_s"] - b["cpu_s"] for c, b in zip(cold, baseline, strict=True)]),
        "own_cpu_overhead_s": median(
            [c["cpu_s"] - b["cpu_s"] + b["gc_s"] for c, b in zip(cold, baseline, strict=True)]
        ),
        "baseline_gc_s": median([b["gc_s"] for b in baseline]),
        "gc_s": median([c["gc_s"] for c in cold]),
        "baseline_s": median([b["import_s"] for b in baseline]),
        "baseline_cpu_s": median([b["cpu_s"] for b in baseline]),
        "total_s": median(totals),
        "cpu_s": median([c["cpu_s"] for c in cold]),
        "import_s": median([c["import_s"] for c in cold]),
        "first_request_s": median([c["first_request_s"] for c in cold]),
    }


def run(size: Size = Size.FULL) -> Outcome:
    from terrace.local import moto_twin

    repetitions = size.pick(full=REPETITIONS, quick=QUICK_REPETITIONS, smoke=1)
    warmup_pairs = size.pick(full=WARMUP_PAIRS, quick=WARMUP_PAIRS, smoke=0)
    stack = ExitStack()
    try:
        endpoint = stack.enter_context(moto_twin.running())  # the local AWS twin, as every moto the project starts
        resources_env, token = seed(endpoint)
        env = lambda_environment(endpoint, resources_env)
        env["PYTHONPATH"] = str(layer_copy(Path(stack.enter_context(tempfile.TemporaryDirectory()))))
        event = json.dumps(api_gateway_event("/api/v2/account/details", token))
        base_env = {k: v for k, v in env.items() if k != "PYTHONPATH"}
        baseline, cold = [], []
        for n in range(warmup_pairs + repetitions):  # pairs: a noisy neighbour weighs on both sides of one alike
            base_found = run_fresh(BASELINE, env=base_env)
            cold_found = run_fresh(COLD, str(HANDLER), event, env=env)
            if n >= warmup_pairs:  # the warm-up pairs (the same for both sides) are left out
                baseline.append(base_found)
                cold.append(cold_found)
    finally:
        stack.close()
    statuses = {c["status"] for c in cold}
    if statuses != {200}:
        raise RuntimeError(f"the first request answered {statuses}")
    found = paired(baseline, cold)
    heavy = sorted({m for c in cold for m in c["loaded"]})
    overhead = f"overhead {found['overhead_s'] * 1000:.0f} ms"
    cpu_overhead = f"overhead {found['cpu_overhead_s'] * 1000:.0f} ms"
    outcome = Outcome("cold_start")
    outcome.row(
        "handler import + first request (paired)",
        found["total_s"],
        found["baseline_s"],
        ratio=found["ratio"],
        target=f"<= {TARGET_RATIO}x",
        note=overhead,
    )
    outcome.row(
        "CPU: handler import + first request (paired)",
        found["cpu_s"],
        found["baseline_cpu_s"],
        ratio=found["cpu_ratio"],
        note=cpu_overhead,
    )
    outcome.row("overhead over the baseline (paired median)", found["overhead_s"])
    outcome.row("CPU overhead over the baseline (paired median)", found["cpu_overhead_s"])
    outcome.row("CPU overhead, the baseline's garbage collection added back", found["own_cpu_overhead_s"])
    outcome.row("handler import", found["import_s"], found["baseline_s"])
    outcome.row("first request (app built on it)", found["first_request_s"])
    outcome.details = {"repetitions": repetitions, "paired": found, "baseline": baseline, "cold": cold}
    outcome.notes.append(
        f"paired ratio {found['ratio']:.2f}x (quartiles {found['ratio_p25']:.2f}-{found['ratio_p75']:.2f}x),"
        f" {overhead}; CPU {found['cpu_ratio']:.2f}x, {cpu_overhead} (target <= {TARGET_RATIO}x; medians over"
        f" {repetitions} pairs of fresh interpreters, baseline then handler, after {warmup_pairs} warm-up pairs)."
        f" Medians of each side: import FastAPI+Mangum+boto3+pydantic {found['baseline_s'] * 1000:.0f} ms"
        f" (CPU {found['baseline_cpu_s'] * 1000:.0f} ms); handler import {found['import_s'] * 1000:.0f} ms + first"
        f" request {found['first_request_s'] * 1000:.0f} ms = {found['total_s'] * 1000:.0f} ms (CPU"
        f" {found['cpu_s'] * 1000:.0f} ms); garbage collection: baseline {found['baseline_gc_s'] * 1000:.0f} ms,"
        f" handler {found['gc_s'] * 1000:.0f} ms of CPU (off until its first invocation ends), so Terrace's own work"
        f" is {found['own_cpu_overhead_s'] * 1000:.0f} ms of CPU; heavy modules loaded: {heavy or 'none'}"
    )
    return outcome
