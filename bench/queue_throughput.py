"""Queue throughput: many auto-applied runs over several workspaces with 2 runners.

Each workspace gets one tiny configuration tarball (configuration-versions + PUT upload-url); runs are
then created round-robin over the workspaces through POST /runs (auto-apply). We wait until all are
final, check that all applied and that each workspace's runs completed in creation order, and compare
the measured runs/minute with the limit the runners allow: runners / (mean plan + mean apply time).

It runs on the embedded server (`terrace serve`: SQLite + files), what one machine runs in production;
`TERRACE_BENCH_BACKEND=moto` runs it on the moto stack instead, whose DynamoDB twin copies its whole table on
every transaction, so the server's own work per phase grows with the table and the ratio drops with it.
"""

from __future__ import annotations

import io
import os
import tarfile
import time
from typing import Any

import httpx

from bench import ratelimit
from bench.common import Api, Outcome, Size, local_stack, median, parse_iso, unique

RUNNERS = 2
CONFIG = b"""
resource "null_resource" "tick" {
  triggers = { at = timestamp() }
}

output "id" {
  value = null_resource.tick.id
}
"""
FINAL = {"applied", "planned_and_finished", "discarded", "errored", "canceled", "force_canceled"}


def tarball() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("main.tf")
        info.size, info.mtime = len(CONFIG), int(time.time())
        tar.addfile(info, io.BytesIO(CONFIG))
    return buffer.getvalue()


def upload_configuration(api: Api, plain: httpx.Client, ws_id: str) -> str:
    cv = api.data(
        "POST",
        f"/api/v2/workspaces/{ws_id}/configuration-versions",
        {"data": {"type": "configuration-versions", "attributes": {"auto-queue-runs": False}}},
    )
    plain.put(cv["attributes"]["upload-url"], content=tarball()).raise_for_status()
    deadline = time.monotonic() + 60
    while api.data("GET", f"/api/v2/configuration-versions/{cv['id']}")["attributes"]["status"] != "uploaded":
        if time.monotonic() > deadline:
            raise RuntimeError(f"configuration version {cv['id']} never became uploaded")
        time.sleep(0.2)
    return str(cv["id"])


def create_run(api: Api, ws_id: str, cv_id: str, n: int) -> str:
    run = api.data(
        "POST",
        "/api/v2/runs",
        {
            "data": {
                "type": "runs",
                "attributes": {"auto-apply": True, "message": f"bench run {n}"},
                "relationships": {
                    "workspace": {"data": {"type": "workspaces", "id": ws_id}},
                    "configuration-version": {"data": {"type": "configuration-versions", "id": cv_id}},
                },
            }
        },
    )
    return str(run["id"])


def wait_final(api: Api, run_ids: list[str], timeout_s: float) -> dict[str, dict[str, Any]]:
    done: dict[str, dict[str, Any]] = {}
    deadline = time.monotonic() + timeout_s
    while len(done) < len(run_ids):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{len(run_ids) - len(done)} runs not final after {timeout_s:.0f} s")
        for run_id in run_ids:
            if run_id not in done:
                run = api.data("GET", f"/api/v2/runs/{run_id}")
                if run["attributes"]["status"] in FINAL:
                    done[run_id] = run
        time.sleep(0.5)
    return done


PHASE_STAMPS: list[tuple[float, float, float]] = []  # (queued, running, finished) of every phase read


def phase_seconds(api: Api, run: dict[str, Any], phase: str) -> float | None:
    kind = "plans" if phase == "plan" else "applies"
    stamps = api.data("GET", f"/api/v2/{kind}/{run['relationships'][phase]['data']['id']}")["attributes"][
        "status-timestamps"
    ]
    start, end = parse_iso(stamps.get("running-at")), parse_iso(stamps.get("finished-at"))
    queued = parse_iso(stamps.get("queued-at"))
    if queued is not None and start is not None and end is not None:
        PHASE_STAMPS.append((queued, start, end))
    return end - start if start is not None and end is not None else None


def run(size: Size = Size.FULL) -> Outcome:
    outcome = Outcome("queue_throughput")
    PHASE_STAMPS.clear()
    n_workspaces, n_runs = size.pick(full=(10, 50), quick=(4, 8), smoke=(2, 3))
    backend = os.environ.get("TERRACE_BENCH_BACKEND", "embedded")
    with local_stack(execution_mode="remote", max_runners=RUNNERS, backend=backend) as stack:
        api, plain = Api(stack), ratelimit.client(timeout=60, verify=stack.ca_bundle)
        try:
            workspaces = [
                api.create_workspace(unique("queue"), **{"execution-mode": "remote"})["id"] for _ in range(n_workspaces)
            ]
            configs = {ws: upload_configuration(api, plain, ws) for ws in workspaces}
            order: dict[str, list[str]] = {ws: [] for ws in workspaces}
            start = time.time()
            all_runs: list[str] = []
            for n in range(n_runs):
                ws = workspaces[n % n_workspaces]
                run_id = create_run(api, ws, configs[ws], n)
                order[ws].append(run_id)
                all_runs.append(run_id)
            created_s = time.time() - start
            runs = wait_final(api, all_runs, timeout_s=120 + n_runs * 20)
            elapsed = (
                max(
                    parse_iso(r["attributes"]["status-timestamps"].get("applied-at")) or time.time()
                    for r in runs.values()
                )
                - start
            )
            statuses = [r["attributes"]["status"] for r in runs.values()]
            applied = statuses.count("applied")
            in_order = all(_completed_in_order([runs[r] for r in ids]) for ids in order.values())
            plans = [s for r in runs.values() if (s := phase_seconds(api, r, "plan")) is not None]
            applies = [s for r in runs.values() if (s := phase_seconds(api, r, "apply")) is not None]
        finally:
            api.close()
            plain.close()
    mean_plan, mean_apply = sum(plans) / len(plans), sum(applies) / len(applies)
    losses = runner_time_lost(PHASE_STAMPS, RUNNERS)
    measured = n_runs / elapsed * 60
    limit = RUNNERS * 60 / (mean_plan + mean_apply)
    outcome.row(
        f"{n_runs} runs / {n_workspaces} workspaces, runs/min",
        measured,
        limit,
        unit="",
        target="baseline = runners / (mean plan + mean apply)",
    )
    outcome.row("all applied", f"{applied}/{n_runs}", target=f"{n_runs}/{n_runs}")
    outcome.row("each workspace completed in creation order", str(in_order), target="True")
    outcome.details = {
        "elapsed_s": elapsed,
        "create_all_s": created_s,
        "statuses": statuses,
        "plan_s": plans,
        "apply_s": applies,
        "mean_plan_s": mean_plan,
        "mean_apply_s": mean_apply,
        "median_plan_s": median(plans),
        "median_apply_s": median(applies),
        "losses": losses,
    }
    outcome.notes.append(
        f"{backend}: {elapsed:.1f} s for {n_runs} runs; mean plan {mean_plan:.2f} s, mean apply "
        f"{mean_apply:.2f} s on the runner; runs created in {created_s:.1f} s"
    )
    outcome.notes.append(
        "runner-seconds lost: " + ", ".join(f"{name} {seconds:.1f}" for name, seconds in losses.items())
    )
    if applied != n_runs or not in_order:
        outcome.notes.append(
            "FAILED CHECK: not every run applied in creation order: " + ", ".join(sorted(set(statuses)))
        )
    return outcome


def runner_time_lost(phases: list[tuple[float, float, float]], runners: int) -> dict[str, float]:
    """Runner-seconds lost while a queued phase waited and a runner was not running one (pick-up, the server's
    work around a phase: finish, claim), against runner-seconds with no phase to run (workspace queues, the
    tail). From the phases' own stamps: the sum of both is where runs/min falls short of the ideal. `overlap`
    counts more phases running than there are runners (a finish stamped late would flatter the ratio)."""
    moments = sorted({t for phase in phases for t in phase})
    lost = starved = overlap = 0.0
    for start, end in zip(moments, moments[1:], strict=False):
        running = sum(1 for _q, r, f in phases if r <= start < f)
        waiting = sum(1 for q, r, _f in phases if q <= start < r)
        free = max(0, runners - running)
        lost += (end - start) * min(free, waiting)
        starved += (end - start) * max(0, free - waiting)
        overlap += (end - start) * max(0, running - runners)  # a phase's end stamped after its runner moved on
    return {"pick-up (runner-s)": lost, "no work queued (runner-s)": starved, "overlap (runner-s)": overlap}


def _completed_in_order(runs: list[dict[str, Any]]) -> bool:
    """Each run finished before the next one (created later) started planning."""
    for earlier, later in zip(runs, runs[1:], strict=False):
        done = parse_iso(earlier["attributes"]["status-timestamps"].get("applied-at"))
        next_done = parse_iso(later["attributes"]["status-timestamps"].get("applied-at"))
        next_plan = parse_iso(later["attributes"]["status-timestamps"].get("planning-at"))
        if done is None or next_done is None or next_done < done or (next_plan is not None and next_plan < done):
            return False
    return True
