"""Load: concurrent remote runs across organizations on a few runners (the embedded server, real terraform 1.0.3).

Full (`make proof`): 30 runs across 10 organizations on 4 runners. Quick (`make test`): 6 runs, 3 organizations,
2 runners. Each organization gets two auto-applied runs (two workspaces) and one speculative plan, all created at
once, one organization after the other, so capacity is short from the first second.

Proves: every run final (the auto-applied ones applied, the speculative ones planned and finished), and lane order
inside each organization: a phase of a higher lane (apply ▸ plan ▸ speculative) already queued when a lower one
started did not start after it. Measures: runs/minute against the ideal, the same configuration applied by a local
`terraform init && terraform apply` as many at a time as there are runners, measured in the same run; fairness
between organizations (each one's wait for its first plan, Jain's index of their mean turnaround), and the
lane inversions across organizations (an idle runner of one organization may take its own speculative plan while
another organization's plan waits for a runner: counted, not forbidden).
"""

from __future__ import annotations

import random
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from job_uids import traversable
from load_support import FULL, report, sized
from terrace.local import terraform_config
from terrace.local.stack import LocalStack

from bench.common import Api, Stack, parse_iso
from bench.queue_throughput import CONFIG, FINAL, upload_configuration
from bench.ratelimit import client as honouring_client

pytestmark = [pytest.mark.proof, pytest.mark.long]

RUNS = sized(6, 30)
ORGANIZATIONS = sized(3, 10)
RUNNERS = sized(2, 4)
TERRAFORM = Path(__import__("sys").executable).parent / "terraform"
LANE_RANK = {"apply": 0, "plan": 1, "speculative": 2}
QUEUE_MARGIN_S = 1.0  # a phase counts as waiting once it was queued this long before the other started


@pytest.fixture(params=["embedded", "moto"] if FULL else ["embedded"])  # moto's quick size: 135 s, make proof only
def run_stack(request: pytest.FixtureRequest) -> Iterator[Stack]:
    root = traversable(Path(tempfile.mkdtemp(prefix="terrace-proof-runs-")))
    data_dir = root / "data" if request.param == "embedded" else None  # moto: the AWS adapters on moto
    local = LocalStack(
        port=0, organization="proof", state_dir=root, prefix=f"proof-{uuid.uuid4().hex[:8]}", data_dir=data_dir
    )
    local.settings_overrides.update({"max_runners": RUNNERS, "job_heartbeat_s": 2, "job_heartbeat_timeout_s": 30})
    info = local.start()
    stack = Stack(local=local, state_dir=root, **info.as_dict())
    try:
        yield stack
    finally:
        local.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.timeout(sized(400, 1500))
def test_concurrent_runs_across_organizations_all_finish_in_lane_order(
    run_stack: Stack, proof_rng: random.Random, proof_seed: int
) -> None:
    api = Api(run_stack)
    plain = honouring_client(timeout=60, verify=run_stack.ca_bundle)
    per_org = RUNS // ORGANIZATIONS
    suffix = proof_rng.randrange(10**6)
    organizations = [f"proof-{n}-{suffix}" for n in range(ORGANIZATIONS)]
    planned: list[tuple[str, str, str, bool]] = []  # organization, workspace id, configuration version, speculative
    for org in organizations:
        api.request("POST", "/api/v2/organizations", _organization(org))
        workspaces = [_remote_workspace(api, org, f"ws-{k}") for k in range(max(1, per_org - 1))]
        configs = {ws: upload_configuration(api, plain, ws) for ws in workspaces}
        for k in range(per_org):
            speculative = k == per_org - 1
            ws = workspaces[k % len(workspaces)]
            planned.append((org, ws, configs[ws], speculative))
    started = time.time()
    run_ids = {
        _create_run(api, ws, cv, speculative, n): (org, speculative)
        for n, (org, ws, cv, speculative) in enumerate(planned)
    }
    done = _wait_final(api, list(run_ids), timeout_s=sized(300, 1200))
    phases = [_phases(api, run, *run_ids[run_id]) for run_id, run in done.items()]
    api.close()
    plain.close()

    statuses = {run_id: run["attributes"]["status"] for run_id, run in done.items()}
    wrong = {
        run_id: status
        for run_id, status in statuses.items()
        if status != ("planned_and_finished" if run_ids[run_id][1] else "applied")
    }
    assert not wrong, f"runs not in their expected final status: {wrong}"
    flat = [phase for run_phases in phases for phase in run_phases]
    in_org = _inversions(flat, same_organization=True)
    assert not in_org, f"lane order broken inside an organization: {in_org[:10]}"

    finished = max(p["finished"] for p in flat)
    measured = len(run_ids) / (finished - started) * 60
    ideal = _local_applies(run_stack, count=max(RUNNERS * 2, RUNNERS), parallel=RUNNERS)
    report(
        "load_runs" if run_stack.local.backend == "embedded" else f"load_runs_{run_stack.local.backend}",
        {
            "command": f"TERRACE_PROOF={'full' if FULL else 'quick'} pytest tests/proof/test_load_runs.py",
            "seed": proof_seed,
            "runs": len(run_ids),
            "organizations": ORGANIZATIONS,
            "runners": RUNNERS,
            "elapsed_s": finished - started,
            "runs_per_min": measured,
            "ideal_runs_per_min": ideal,
            "ratio": measured / ideal,
            **_fairness(flat, organizations, started),
            "cross_organization_lane_inversions": len(_inversions(flat, same_organization=False)),
        },
    )


def _organization(name: str) -> dict[str, Any]:
    attributes = {"name": name, "email": f"{name}@example.com", "default-execution-mode": "remote"}
    return {"data": {"type": "organizations", "attributes": attributes}}


def _remote_workspace(api: Api, organization: str, name: str) -> str:
    body = {
        "data": {
            "type": "workspaces",
            "attributes": {"name": name, "execution-mode": "remote", "terraform-version": "1.0.3"},
        }
    }
    return str(api.data("POST", f"/api/v2/organizations/{organization}/workspaces", body)["id"])


def _create_run(api: Api, ws: str, cv: str, speculative: bool, n: int) -> str:
    attributes = {"plan-only": True} if speculative else {"auto-apply": True}
    body = {
        "data": {
            "type": "runs",
            "attributes": {**attributes, "message": f"proof run {n}"},
            "relationships": {
                "workspace": {"data": {"type": "workspaces", "id": ws}},
                "configuration-version": {"data": {"type": "configuration-versions", "id": cv}},
            },
        }
    }
    return str(api.data("POST", "/api/v2/runs", body)["id"])


def _wait_final(api: Api, run_ids: list[str], timeout_s: float) -> dict[str, dict[str, Any]]:
    done: dict[str, dict[str, Any]] = {}
    deadline = time.monotonic() + timeout_s
    while len(done) < len(run_ids):
        pending = [run_id for run_id in run_ids if run_id not in done]
        assert time.monotonic() < deadline, f"runs not final after {timeout_s:.0f} s: {pending}"
        for run_id in pending:
            run = api.data("GET", f"/api/v2/runs/{run_id}")
            if run["attributes"]["status"] in FINAL:
                done[run_id] = run
        time.sleep(1)
    return done


def _phases(api: Api, run: dict[str, Any], organization: str, speculative: bool) -> list[dict[str, Any]]:
    """The run's phases with their lane, organization and queued/started/finished times (epoch seconds)."""
    found = []
    created = parse_iso(run["attributes"]["created-at"])
    for phase, kind in (("plan", "plans"), ("apply", "applies")):
        ref = (run["relationships"].get(phase) or {}).get("data")
        if not ref:
            continue
        stamps = api.data("GET", f"/api/v2/{kind}/{ref['id']}")["attributes"]["status-timestamps"]
        queued, running = parse_iso(stamps.get("queued-at")), parse_iso(stamps.get("running-at"))
        finished = parse_iso(stamps.get("finished-at"))
        if queued is None or running is None or finished is None:
            continue  # a phase that never ran (the apply of a speculative plan)
        lane = "apply" if phase == "apply" else "speculative" if speculative else "plan"
        found.append(
            {
                "run": run["id"],
                "organization": organization,
                "lane": lane,
                "created": created,
                "queued": queued,
                "started": running,
                "finished": finished,
            }  # fmt: skip
        )
    return found


def _inversions(phases: list[dict[str, Any]], *, same_organization: bool) -> list[tuple[str, str]]:
    """Pairs (higher, lower) where `higher` (a higher lane) waited, queued before `lower` started, and started after."""
    found = []
    for high in phases:
        for low in phases:
            if (high["organization"] == low["organization"]) != same_organization:
                continue
            if LANE_RANK[high["lane"]] >= LANE_RANK[low["lane"]]:
                continue
            if high["queued"] + QUEUE_MARGIN_S < low["started"] < high["started"]:
                found.append((f"{high['run']}:{high['lane']}", f"{low['run']}:{low['lane']}"))
    return found


def _fairness(phases: list[dict[str, Any]], organizations: list[str], started: float) -> dict[str, Any]:
    first_plan = {
        org: min(p["started"] for p in phases if p["organization"] == org and p["lane"] != "apply") - started
        for org in organizations
    }
    turnaround: dict[str, list[float]] = {org: [] for org in organizations}
    for run_id in {p["run"] for p in phases}:
        run_phases = [p for p in phases if p["run"] == run_id]
        turnaround[run_phases[0]["organization"]].append(max(p["finished"] for p in run_phases) - started)
    means = [sum(values) / len(values) for values in turnaround.values()]
    jain = sum(means) ** 2 / (len(means) * sum(m * m for m in means))
    return {
        "first_plan_wait_s": {org: round(wait, 1) for org, wait in first_plan.items()},
        "first_plan_wait_max_s": max(first_plan.values()),
        "mean_turnaround_s": {org: round(m, 1) for org, m in zip(turnaround, means, strict=True)},
        "jain_fairness_of_turnaround": jain,
    }


def _local_applies(stack: Stack, *, count: int, parallel: int) -> float:
    """Runs/minute of the same configuration applied locally (`terraform init && terraform apply`), `parallel` at a
    time: the ideal the runners would reach if the server cost nothing."""
    with tempfile.TemporaryDirectory(prefix="terrace-proof-local-") as tmp:
        env = terraform_config.terraform_env(stack.cli_config, stack.ca_bundle, Path(tmp) / "home")
        (Path(tmp) / "home").mkdir()

        def one(n: int) -> None:
            work = Path(tmp) / f"w{n}"
            work.mkdir()
            (work / "main.tf").write_bytes(CONFIG)
            for args in (
                ["init", "-input=false", "-no-color"],
                ["apply", "-auto-approve", "-input=false", "-no-color"],
            ):
                subprocess.run([str(TERRAFORM), *args], cwd=work, env=env, check=True, capture_output=True, timeout=300)  # noqa: S603

        began = time.monotonic()
        with ThreadPoolExecutor(parallel) as pool:
            list(pool.map(one, range(count)))
        return count / (time.monotonic() - began) * 60
