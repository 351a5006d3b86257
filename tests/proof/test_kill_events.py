"""SIGKILL of the events worker mid-batch (issue 30, process kills), on the embedded server and on the AWS adapters.

The events worker is a thread pool of the server process (`local/workers.py`): it takes up to ten events at a time
off the events queue (SQLite embedded; SQS on moto, in a process of its own that outlives the kill, where a taken
message comes back after its visibility timeout) and acknowledges each when its handler returned. Runs are
created (no runner starts: `max_runners` 0, so the events are the runs' `run:created` notifications and the
configuration uploads' landings) in workspaces whose notification configuration posts to a slow receiver on
loopback; the server is killed once the receiver has seen a random part of the deliveries, with others in
flight, and restarted.

The at-least-once rule: every run's `run:created` notification reaches the receiver at least once after the
restart. A delivery is sent again only when the kill caught it between its POST and its acknowledgement, so the
duplicates of one kill are at most the worker's handlers (`EVENT_HANDLERS`), and a duplicate is byte-identical
(the body is built once, when the delivery is queued): a receiver de-duplicates on it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from kill_receiver import Receiver
from kill_run_client import remote_workspace, start_run
from kill_server import Client, ProofServer, serving, sized, wait_for
from terrace.local.workers import EVENT_HANDLERS

pytestmark = [pytest.mark.proof, pytest.mark.timeout(sized(300, 1200))]


@pytest.fixture(params=["embedded", "moto"])
def proof_server(request: pytest.FixtureRequest) -> Iterator[ProofServer]:
    with serving({"max_runners": 0}, backend=request.param) as server:
        yield server


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    made = Receiver(delay_s=0.5)
    yield made
    made.close()


def test_events_worker_killed_mid_batch_delivers_every_notification_at_least_once(
    proof_server: ProofServer, receiver: Receiver, proof_rng
) -> None:
    rounds, per_round = sized(0, 5), sized(6, 16)
    if not rounds:  # make test: the mid-run kill of test_kill_runners.py checks notifications at least once
        pytest.skip("the events worker's kill rounds run in make proof (TERRACE_PROOF=full)")
    client = Client(proof_server.start())
    workspaces = [remote_workspace(client, f"kill-events-{n}") for n in range(2)]
    for ws_id in workspaces:
        attributes = {"name": "proof", "destination-type": "generic", "enabled": True, "url": receiver.url,
                      "triggers": ["run:created"]}  # fmt: skip
        body = {"data": {"type": "notification-configurations", "attributes": attributes}}
        client.request("POST", f"/api/v2/workspaces/{ws_id}/notification-configurations", body, expect=201)
    runs: list[str] = []
    seen_at_kills: list[int] = []
    for _ in range(rounds):
        before = len(receiver.created())
        batch = [start_run(client, workspaces[n % 2], 'resource "null_resource" "a" {}\n') for n in range(per_round)]
        runs += batch
        goal = before + proof_rng.randint(1, per_round - 1)
        wait_for(lambda goal=goal: len(receiver.created()) >= goal, 120, "some deliveries", 0.02)
        seen_at_kills.append(len(receiver.created()) - before)
        proof_server.kill()
        client.close()
        client = Client(proof_server.start())
    wait_for(lambda: set(runs) <= set(receiver.created()), 180, "every run's run:created notification")
    delivered = receiver.created()
    duplicates = {run_id: bodies for run_id, bodies in delivered.items() if len(bodies) > 1}
    for run_id, bodies in duplicates.items():
        assert len(set(bodies)) == 1, f"{run_id}: a redelivered notification differs"
    extra = sum(len(bodies) - 1 for bodies in duplicates.values())
    assert extra <= EVENT_HANDLERS * rounds, (
        f"{extra} duplicates over {rounds} kills: more than the deliveries in flight"
    )
    print(
        f"\nkill proof, events: {rounds} kills, {len(runs)} runs, {sum(len(b) for b in delivered.values())} "
        f"run:created deliveries received ({extra} duplicates), delivered before each kill: {json.dumps(seen_at_kills)}"
    )
    client.close()
    assert proof_server.stop() == 0
