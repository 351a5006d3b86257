"""The logs function's cold start (`python -m bench.logs_cold_start`): importing `functions/logs/handler.py` and
serving the CLI's first log read, in a fresh interpreter, as `bench.cold_start` measures the API function's.

The read is a real one: a run whose plan is running and has written its first line, on moto (the table, bucket and
queues of `definitions.py` on a moto server this process runs), read through the log-read URL the API mints for it
(`LogService.signed_path`) in a function URL's event (payload format 2.0), with the logs function's environment
(`infra/log_reads.py`: `TERRACE_LOG_READ_WAIT_S=0`). The handler times itself from its first import on, so the
interpreter's own start-up, and Lambda's (the runtime's init, before the handler's module is loaded), are left out.
`bench.first_run` adds it to the first run as a segment: on the cold path the CLI's first read happens while the
runner starts (it is overlapped), on the warm path it is on the way to the first line.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import tempfile
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from bench.cold_start import COLLECTOR, lambda_environment, layer_copy, run_fresh
from bench.common import median

ROOT = Path(__file__).resolve().parents[1]
HANDLER = ROOT / "functions" / "logs" / "handler.py"
FIRST_LINE = b"Initializing the backend...\n"
SECRET = "bench-signing-secret"

# The handler, loaded as Lambda loads it, then the CLI's first read; the timings go out on the descriptor named last.
COLD = (
    COLLECTOR
    + """
import importlib.util, json, os, sys, time
start, cpu = time.perf_counter(), time.process_time()
spec = importlib.util.spec_from_file_location("handler", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
imported = time.perf_counter()
response = module.lambda_handler(json.loads(sys.argv[2]), None)
served, cpu = time.perf_counter(), time.process_time() - cpu
with os.fdopen(int(sys.argv[3]), "w") as out:
    out.write(json.dumps({"import_s": imported - start, "first_request_s": served - imported, "cpu_s": cpu,
        "status": response["statusCode"], "body": response["body"]}))
"""
)


def url_event(path: str) -> dict[str, Any]:
    """A function URL's event (payload format 2.0) for the CLI's read of `path` (go-tfe's LogReader)."""
    query = {"limit": "65536", "offset": "0"}
    return {
        "version": "2.0", "routeKey": "$default", "rawPath": path, "rawQueryString": "limit=65536&offset=0",
        "headers": {"host": "abc123.lambda-url.us-east-1.on.aws", "user-agent": "go-tfe"},
        "queryStringParameters": query, "isBase64Encoded": False,
        "requestContext": {"domainName": "abc123.lambda-url.us-east-1.on.aws", "http": {"method": "GET", "path": path}},
    }  # fmt: skip


def running_plan(endpoint: str) -> tuple[dict[str, str], str]:
    """The resources of definitions.py on moto with a run whose plan runs and has written its first line; (their
    TERRACE_* variables, the path of the plan's log-read URL)."""
    from terrace.bootstrap import build_aws
    from terrace.config import Settings
    from terrace.domain import clock
    from terrace.domain.ids import new_id
    from terrace.domain.runs import PhaseState, Run
    from terrace.wiring.local_resources import create_resources

    resources = create_resources(endpoint, f"logs{uuid.uuid4().hex[:6]}")  # moto's backends outlive a server
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    settings = Settings(**resources.settings_fields(), aws_endpoint_url=endpoint, url_signing_secret=SECRET)
    container = build_aws(settings)
    run_id = new_id("run")
    phase = f"plan-{run_id.removeprefix('run-')}"
    run = Run(id=run_id, organization="acme", workspace_id=new_id("ws"), configuration_version_id=new_id("cv"),
              created_at=clock.now_iso(), created_by="bench", status="planning", resolved_variables=[],
              plan=PhaseState(id=phase, status="running", attempt=1))  # fmt: skip
    container.run_store.save([(run, None)])
    container.logs.append(phase, 1, 0, FIRST_LINE)
    return resources.env(), container.logs.signed_path(phase)


def measure(repetitions: int = 5, warmup: int = 1) -> dict[str, float]:
    """Medians of fresh interpreters: import, first read, their total and the CPU time."""
    from terrace.local import moto_twin

    with ExitStack() as stack:
        endpoint = stack.enter_context(moto_twin.running())
        resources_env, path = running_plan(endpoint)
        env = lambda_environment(endpoint, resources_env)
        env |= {"AWS_LAMBDA_FUNCTION_NAME": "terrace-logs", "POWERTOOLS_SERVICE_NAME": "terrace-logs"}
        env |= {"TERRACE_LOG_READ_WAIT_S": "0", "TERRACE_URL_SIGNING_SECRET": SECRET}
        env["PYTHONPATH"] = str(layer_copy(Path(stack.enter_context(tempfile.TemporaryDirectory()))))
        event = json.dumps(url_event(path))
        found = [run_fresh(COLD, str(HANDLER), event, env=env) for _ in range(warmup + repetitions)][warmup:]
    if {f["status"] for f in found} != {200}:
        raise RuntimeError(f"the first read answered {[f['status'] for f in found]}")
    if base64.b64decode(found[0]["body"]) != b"\x02" + FIRST_LINE:
        raise RuntimeError("the first read did not carry the plan's first line")
    return {
        "import_s": median([f["import_s"] for f in found]),
        "first_request_s": median([f["first_request_s"] for f in found]),
        "total_s": median([f["import_s"] + f["first_request_s"] for f in found]),
        "cpu_s": median([f["cpu_s"] for f in found]),
    }


def main() -> int:
    found = measure()
    print(
        f"logs function cold start (median of fresh interpreters, moto): import {found['import_s'] * 1000:.0f} ms"
        f" + first read {found['first_request_s'] * 1000:.0f} ms = {found['total_s'] * 1000:.0f} ms"
        f" (CPU {found['cpu_s'] * 1000:.0f} ms)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
