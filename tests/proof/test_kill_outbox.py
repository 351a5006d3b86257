"""SIGKILL between a run transition's commit and its event's publish (issue 30, the transactional outbox).

A run transition stages its `run.status_changed` event in its own transaction (`adapters/outbox.py`); the relay
publishes it right after the commit. The server here is killed exactly between the two: `kill_commit.py` wraps its
table and SIGKILLs the process right after the n-th committed transition to `pending` since the start (n drawn
from `proof_rng`), inside the `POST /api/v2/runs` that creates that run. No runner starts (`max_runners` 0), so a
run's `pending` transition is the only event that tells of its creation: the notification configuration's
`run:created` webhook to a receiver on loopback reaches it only if that event is published.

The rule: after the restart, every run the workspace holds (the killed requests' runs too: their transactions
committed) has its `run:created` notification delivered, by the reaper's outbox sweep for the killed ones; a
duplicate (a relay killed between its publish and its removal) is byte-identical.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from kill_commit import ENV, KILL_MARKER
from kill_receiver import Receiver
from kill_run_client import remote_workspace, upload
from kill_server import Client, ProofServer, serving, sized, wait_for

pytestmark = [pytest.mark.proof, pytest.mark.timeout(sized(120, 900))]


@pytest.fixture
def proof_server() -> Iterator[ProofServer]:
    with serving({"max_runners": 0}) as server:
        yield server


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    made = Receiver(delay_s=0)
    yield made
    made.close()


def _run_body(ws_id: str, cv_id: str) -> dict[str, object]:
    return {"data": {"type": "runs", "attributes": {"message": "outbox proof"}, "relationships": {
        "workspace": {"data": {"type": "workspaces", "id": ws_id}},
        "configuration-version": {"data": {"type": "configuration-versions", "id": cv_id}}}}}  # fmt: skip


def test_a_kill_between_a_transitions_commit_and_its_publish_loses_no_event(
    proof_server: ProofServer, receiver: Receiver, proof_rng
) -> None:
    rounds, per_round = sized(1, 6), sized(2, 4)
    kills = [proof_rng.randint(1, per_round) for _ in range(rounds)]  # the n-th run of each round is killed
    client = Client(proof_server.start({ENV: f"pending:{kills[0]}"}))
    ws_id = remote_workspace(client, "kill-outbox")
    attributes = {"name": "proof", "destination-type": "generic", "enabled": True, "url": receiver.url,
                  "triggers": ["run:created"]}  # fmt: skip
    body = {"data": {"type": "notification-configurations", "attributes": attributes}}
    client.request("POST", f"/api/v2/workspaces/{ws_id}/notification-configurations", body, expect=201)
    cv_id = upload(client, ws_id, 'resource "null_resource" "a" {}\n')
    answered: list[str] = []
    for number, nth in enumerate(kills):
        for _ in range(nth - 1):
            answered.append(
                client.request("POST", "/api/v2/runs", _run_body(ws_id, cv_id), expect=201).json()["data"]["id"]
            )
        with pytest.raises(httpx.TransportError):  # the server dies inside this request, after its commit
            client.request("POST", "/api/v2/runs", _run_body(ws_id, cv_id), expect=None)
        assert proof_server.died(30) == -9
        assert proof_server.output().count(KILL_MARKER) == number + 1, proof_server.output()[-3000:]
        client.close()
        following = {ENV: f"pending:{kills[number + 1]}"} if number + 1 < rounds else None
        client = Client(proof_server.start(following))
    listed = client.request("GET", f"/api/v2/workspaces/{ws_id}/runs?page%5Bsize%5D=100").json()["data"]
    runs = {run["id"] for run in listed}
    killed = runs - set(answered)
    assert set(answered) <= runs and len(killed) == rounds, "each killed request's run committed"
    wait_for(lambda: runs <= set(receiver.created()), sized(60, 180), "every run's run:created notification")
    delivered = receiver.created()
    for run_id, bodies in delivered.items():
        assert len(set(bodies)) == 1, f"{run_id}: a redelivered notification differs"
    print(
        f"\nkill proof, outbox: {rounds} kills between a commit and its publish (at run {json.dumps(kills)} of each"
        f" round), {len(runs)} runs, every run:created delivered ({sum(len(b) for b in delivered.values())} in all)"
    )
    client.close()
    assert proof_server.stop() == 0
