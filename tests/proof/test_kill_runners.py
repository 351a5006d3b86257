"""SIGKILL of runners during init, plan, apply and the report, and of the server (with its runners and its events
worker) in the middle of runs (issue 30, process kills), on the embedded server and on the AWS adapters (moto in a
process of its own, `kill_server.MotoProcess`, so the table, buckets and queues outlive the killed server).

Every run applies a `null_resource` whose provisioner counts its executions in a file outside the job's sandbox
(`kill_run_client.ApplyCounter`). The rules checked after each kill:

- apply-once: no run's provisioner ever starts twice; a run that ends `applied` ran it exactly once;
- a runner killed before its apply started (init, plan) costs a retry: the run still ends `applied`;
  one killed once the apply started (apply, report) ends the run `errored` (its apply is never run again), or
  `applied` when the apply's report had reached the server before the kill;
- every run is final within its deadline (the reaper notices a silent runner after `job_heartbeat_timeout_s`,
  4 s here; a restarted server hands back the jobs of the runners that died with it);
- the workspace is unlocked once its run is final; no process of a killed job survives (its marker is in the
  provisioner's command line) and no job folder of a killed runner stays in the runners' work folder;
- notifications (a receiver on loopback, slow on purpose so the events worker is mid-batch when the server is
  killed): every run's final trigger is delivered at least once after the restart; a duplicate is the same body.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

import pytest
from kill_receiver import Receiver
from kill_run_client import (
    FINAL,
    ApplyCounter,
    interrupted,
    marker,
    remote_workspace,
    start_run,
    status,
    status_at,
    wait_final,
)
from kill_server import Client, ProofServer, descendants, processes_mentioning, serving, sized, wait_for

pytestmark = [pytest.mark.proof, pytest.mark.long, pytest.mark.timeout(sized(600, 1800))]
RUN_DEADLINE_S = 240  # a run's whole life on a loaded 2-core machine, retries included
PHASES = ("init", "plan", "apply", "report")
PLAN_COMMAND = " plan -input=false"  # `runner/commands.py: plan_args`, in the job's command line


BACKENDS = ["embedded", "moto"]


@pytest.fixture(params=BACKENDS)
def proof_server(request: pytest.FixtureRequest) -> Iterator[ProofServer]:
    with serving(backend=request.param) as server:
        yield server


@pytest.fixture
def counter() -> Iterator[ApplyCounter]:
    made = ApplyCounter()
    yield made
    shutil.rmtree(made.root, ignore_errors=True)


def _reached(
    server: ProofServer, client: Client, counter: ApplyCounter, run_id: str, m: str, phase: str
) -> Callable[[], bool]:
    def probe() -> bool:
        now = status(client, run_id)
        if now in FINAL:
            return True  # too late for this phase: the kill lands after the run (counted as such)
        if phase == "init":
            return now == "planning"
        if phase == "plan":  # init is over once `terraform plan` runs (init's output reaches the log only if it fails)
            return now == "planning" and _planning(server)
        if phase == "apply":
            return counter.starts(m) >= 1
        return counter.done(m) >= 1

    return probe


def _planning(server: ProofServer) -> bool:
    """A `terraform plan` process runs below the server (one run at a time in the runner kills)."""
    return any(PLAN_COMMAND in cmd for cmd in descendants(server.pid).values())


def _job_folders(server: ProofServer) -> list[str]:
    work = server.data / "runner-work"
    return sorted(p.name for p in work.iterdir()) if work.is_dir() else []


def test_runner_kills_never_apply_twice_and_every_run_ends(
    proof_server: ProofServer, counter: ApplyCounter, proof_rng
) -> None:
    kills = sized(1, 12)
    client = Client(proof_server.start())
    ws_id = remote_workspace(client, "kill-runners")
    outcomes: dict[str, dict[str, int]] = {}
    for _ in range(kills):
        phase = proof_rng.choice(PHASES)
        m = marker()
        run_id = start_run(client, ws_id, counter.configuration(m, sleep_s=1.5))
        reached = _reached(proof_server, client, counter, run_id, m, phase)
        wait_for(reached, RUN_DEADLINE_S, f"{run_id} to reach {phase}", 0.05)
        if phase in ("init", "plan"):  # a random instant into the phase
            threading.Event().wait(proof_rng.uniform(0, 0.5))
        runners = proof_server.runner_pids()
        for pid in runners:
            os.kill(pid, signal.SIGKILL)
        # what the dead runner had reported last (on a loaded machine a phase may be over before the kill lands)
        at_kill = status(client, run_id)
        ended = wait_final(client, run_id, RUN_DEADLINE_S)
        key = f"{phase} ({at_kill})"
        outcomes.setdefault(key, {}).setdefault(ended, 0)
        outcomes[key][ended] += 1
        starts = counter.starts(m)
        assert starts <= 1, f"{run_id}: the apply ran {starts} times (killed in {phase})"
        if ended == "applied":
            assert (starts, counter.done(m)) == (1, 1), f"{run_id} applied with {starts} executions"
        else:
            assert ended == "errored", f"{run_id} killed in {phase}: {ended}"
            # a plan killed is retried; an apply the server had handed out (applying) is never run again
            assert at_kill != "planning", f"{run_id}: a runner killed while planning must cost a retry only"
            assert interrupted(client, run_id), f"{run_id} ({at_kill} at the kill) errored, not by an apply cut short"
        ws = client.request("GET", f"/api/v2/workspaces/{ws_id}").json()["data"]["attributes"]
        assert not ws["locked"], f"{run_id} ended {ended} and left the workspace locked"
        wait_for(lambda: not processes_mentioning(m), 30, f"the processes of {run_id}'s killed job to go")  # noqa: B023
    print(f"\nkill proof, runners: {kills} kills, outcomes by phase killed in: {json.dumps(outcomes)}")
    client.close()
    assert proof_server.stop() == 0
    left = _job_folders(proof_server)
    assert not left, f"job folders of killed runners left behind: {left}"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    made = Receiver(delay_s=0.3)
    yield made
    made.close()


def test_server_kills_mid_run_end_every_run_once_and_deliver_every_notification(
    proof_server: ProofServer, counter: ApplyCounter, receiver: Receiver, proof_rng
) -> None:
    kills = sized(1, 6)
    client = Client(proof_server.start())
    workspaces = [remote_workspace(client, f"kill-mid-run-{n}") for n in range(sized(1, 2))]
    triggers = ["run:created", "run:planning", "run:applying", "run:completed", "run:errored"]
    for ws_id in workspaces:
        attributes = {"name": "proof", "destination-type": "generic", "enabled": True, "url": receiver.url,
                      "triggers": triggers}  # fmt: skip
        body = {"data": {"type": "notification-configurations", "attributes": attributes}}
        client.request("POST", f"/api/v2/workspaces/{ws_id}/notification-configurations", body, expect=201)
    runs: dict[str, str] = {}  # run id -> marker
    outcomes: dict[str, int] = {}  # "<status at the kill>-><final status>" -> runs
    targets: dict[str, int] = {}
    for _ in range(kills):
        started = {
            start_run(client, ws_id, counter.configuration(m := marker(), sleep_s=1.0)): m for ws_id in workspaces
        }
        runs.update(started)
        # kill at a random moment of the runs' lives: after a random number of their transitions
        target = proof_rng.choice(["plan_queued", "planning", "applying", "apply-started"])
        run_id = proof_rng.choice(list(started))

        def there(
            run_id: str = run_id, target: str = target, client: Client = client, started: dict[str, str] = started
        ) -> bool:
            now = status(client, run_id)
            if target == "apply-started":
                return counter.starts(started[run_id]) >= 1 or now in FINAL
            order = ["pending", "plan_queued", "planning", "planned", "apply_queued", "applying"]
            return now in FINAL or (now in order and order.index(now) >= order.index(target))

        wait_for(there, RUN_DEADLINE_S, f"{run_id} to reach {target}", 0.05)
        threading.Event().wait(proof_rng.uniform(0, 0.4))
        proof_server.kill()
        killed_at = datetime.now(UTC)
        client.close()
        client = Client(proof_server.start())
        targets[target] = targets.get(target, 0) + 1
        for rid in started:
            ended = wait_final(client, rid, RUN_DEADLINE_S)
            # judged by the status the run had when the server died (the kill may land past the target)
            at_kill = status_at(client, rid, killed_at)
            outcomes[f"{at_kill}->{ended}"] = outcomes.get(f"{at_kill}->{ended}", 0) + 1
            if ended == "errored":  # only an apply terraform had started may end so; anything earlier is retried
                assert at_kill == "applying", f"{rid} was {at_kill} when the server was killed, and errored"
                assert interrupted(client, rid), f"{rid} errored, not by an apply cut short"
        print(f"\nkill {proof_server.kills}: {target} of {run_id}; outcomes so far: {json.dumps(outcomes)}")
    for rid, m in runs.items():
        ended = status(client, rid)
        starts = counter.starts(m)
        assert starts <= 1, f"{rid}: the apply ran {starts} times"
        if ended == "applied":
            assert (starts, counter.done(m)) == (1, 1), f"{rid} applied with {starts} executions"
        assert ended in ("applied", "errored"), f"{rid}: {ended}"
        wait_for(lambda m=m: not processes_mentioning(m), 30, f"the processes of {rid}'s job to go")
    final_trigger = {"applied": "run:completed", "errored": "run:errored"}
    wanted = {(rid, final_trigger[status(client, rid)]) for rid in runs}
    wait_for(lambda: wanted <= {key[1:] for key in receiver.triggers()}, 120, "every run's final notification")
    # the same body twice is a redelivery; two bodies of one trigger are two transitions (a plan retried after the
    # kill enters `planning` again, with its own time)
    duplicates = {key: len(bodies) - len(set(bodies)) for key, bodies in receiver.triggers().items()}
    duplicates = {key: extra for key, extra in duplicates.items() if extra}
    for ws_id in workspaces:
        assert not client.request("GET", f"/api/v2/workspaces/{ws_id}").json()["data"]["attributes"]["locked"]
    print(
        f"\nkill proof, server mid-run: {kills} kills (targets {json.dumps(targets)}), {len(runs)} runs, "
        f"outcomes by status at the kill: {json.dumps(outcomes)}, "
        f"notifications: {len(receiver.bodies)} received, {sum(duplicates.values())} redelivered, "
        f"{receiver.cut} cut short by a kill"
    )
    client.close()
    assert proof_server.stop() == 0
    left = _job_folders(proof_server)
    assert not left, f"job folders of killed runners left behind: {left}"
