"""Runner pick-up: how long a queued plan waits for a runner, with a runner already waiting (warm), with none
(cold: the scaler starts a runner process when the plan is queued), and with none but a runner started when the
configuration version was created (its start overlaps the upload, as on AWS).

Each repetition uses its own workspace and a speculative plan of a configuration without providers; for the
cold cases the stack's runner processes are killed first. Figures come from the plan's status timestamps and
the client's clock (the stack runs in this process, so clocks agree).
"""

from __future__ import annotations

import os
import time
from typing import Any

import httpx

from bench import ratelimit
from bench.common import Api, Outcome, Size, Stack, local_stack, median, parse_iso, unique
from bench.queue_throughput import FINAL, upload_configuration

MODES = ("warm", "cold, runner started at enqueue", "cold, runner started at configuration upload")


def kill_runners(stack: Stack) -> None:
    launcher = stack.local.launcher
    assert launcher is not None, "the stack runs no scaler"
    for runner in launcher.runners:
        runner.process.kill()
        runner.process.wait(30)
    launcher.live()


def wait_plan_running(api: Api, run_id: str, timeout_s: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        run = api.data("GET", f"/api/v2/runs/{run_id}")
        plan = api.data("GET", f"/api/v2/plans/{run['relationships']['plan']['data']['id']}")
        if plan["attributes"]["status-timestamps"].get("running-at"):
            return plan
        time.sleep(0.1)
    raise RuntimeError(f"the plan of {run_id} never started")


def wait_run_final(api: Api, run_id: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while api.data("GET", f"/api/v2/runs/{run_id}")["attributes"]["status"] not in FINAL:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{run_id} never ended")
        time.sleep(0.1)
    time.sleep(0.5)  # the runner's report and clean-up after the run's end


def one_plan(api: Api, plain: httpx.Client) -> dict[str, float]:
    ws = api.create_workspace(unique("pickup"), **{"execution-mode": "remote"})["id"]
    started = time.time()
    cv_id = upload_configuration(api, plain, ws)  # create, PUT the archive, wait until it reads uploaded
    body = {
        "data": {
            "type": "runs",
            "attributes": {"plan-only": True},
            "relationships": {
                "workspace": {"data": {"type": "workspaces", "id": ws}},
                "configuration-version": {"data": {"type": "configuration-versions", "id": cv_id}},
            },
        }
    }
    run = api.data("POST", "/api/v2/runs", body)
    stamps = wait_plan_running(api, run["id"])["attributes"]["status-timestamps"]
    queued, running = parse_iso(stamps.get("queued-at")), parse_iso(stamps.get("running-at"))
    assert queued is not None and running is not None
    wait_run_final(api, run["id"])  # the runner is idle again before the next repetition
    return {"queued -> running": running - queued, "upload start -> running": running - started}


def run(size: Size = Size.FULL) -> Outcome:
    outcome = Outcome("pickup")
    repeats = size.pick(full=4, quick=2, smoke=1)
    results: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
    backend = os.environ.get("TERRACE_BENCH_BACKEND", "embedded")
    with local_stack(execution_mode="remote", max_runners=2, backend=backend) as stack:
        api, plain = Api(stack), ratelimit.client(timeout=60, verify=stack.ca_bundle)
        container = stack.local.container
        try:
            one_plan(api, plain)  # warm-up: a runner process exists afterwards
            for _ in range(repeats):
                results[MODES[0]].append(one_plan(api, plain))
            for _ in range(repeats):
                kill_runners(stack)
                container.expect_runner = lambda _ws: None  # the scaler hears of the plan's enqueue only
                results[MODES[1]].append(one_plan(api, plain))
                kill_runners(stack)
                del container.expect_runner  # the class's again: a runner starts at the upload
                results[MODES[2]].append(one_plan(api, plain))
        finally:
            api.close()
            plain.close()
    for mode in MODES:
        outcome.row(f"{mode}: plan queued -> running", median([r["queued -> running"] for r in results[mode]]))
        outcome.row(
            f"{mode}: upload start -> plan running", median([r["upload start -> running"] for r in results[mode]])
        )
    outcome.details = {"results": results, "repeats": repeats}
    outcome.notes.append(f"{backend}: medians; each repetition a fresh workspace, a speculative plan, no providers")
    return outcome
