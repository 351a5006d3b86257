"""One organization's slow policy sets never starve another's: each organization has a few evaluation slots, held in
the table (so the bound holds across the events Lambda's instances as across the embedded server's handler
threads), and a set that finds its organization's slots full is put back on the queue instead of holding a handler.

Driven through the embedded server's own events worker (`local/workers.events`, its 8 handler threads) on a
memory events queue, with an engine that blocks the hog organization's sets on an event (no timing): with the cap
at 2, the hog's ten sets never hold more than 2 handlers, and the victim's trivial plan passes its stage while they
wait; released, the hog's sets all end."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from fastapi.testclient import TestClient
from policy_helpers import DENY_NULL, plan_run
from run_helpers import RunEnv
from terrace.adapters.held_reads import HeldReadsTable
from terrace.adapters.memory_blobs import MemoryBlobs
from terrace.adapters.memory_events import MemoryEventQueue
from terrace.adapters.memory_table import MemoryTable
from terrace.adapters.policy_engine import EngineResult, QueryResult
from terrace.bootstrap import Container
from terrace.config import Settings
from terrace.domain.principal import PrincipalKind
from terrace.local import workers
from terrace.services.policies import evaluation_worker
from terrace.web.app import create_app

CAP = 2
HOG_SETS = 10  # more than the worker's 8 handlers: without a cap they would all be held


class BlockingEngine:
    """Evaluates nothing: a hog's set (its modules named `hog…`) waits for `release`, any other passes at once.
    Counts the hog's sets inside the engine, and the most there ever were at once."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self._lock = threading.Lock()
        self.inside: Counter[str] = Counter()
        self.most: Counter[str] = Counter()

    def check(self, modules: Any) -> str | None:
        return None

    def evaluate(self, modules: Any, queries: Any, input_doc: Any, data: Any = None) -> EngineResult:
        who = "hog" if any(name.startswith("hog") for name in modules) else "victim"
        with self._lock:
            self.inside[who] += 1
            self.most[who] = max(self.most[who], self.inside[who])
        try:
            if who == "hog":
                self.release.wait(60)
            return EngineResult(results=tuple(QueryResult(query=q, defined=True, value=[]) for q in queries))
        finally:
            with self._lock:
                self.inside[who] -= 1


def poll(condition: Callable[[], Any], what: str, deadline_s: float = 30) -> None:
    deadline = time.monotonic() + deadline_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"gave up waiting: {what}")
        time.sleep(0.02)


def organization_env(container: Container, client: TestClient, headers: dict[str, str], name: str) -> RunEnv:
    org = {"data": {"type": "organizations", "attributes": {"name": name, "email": "a@example.com"}}}
    assert client.post("/api/v2/organizations", headers=headers, json=org).status_code == 201
    ws = {"data": {"type": "workspaces", "attributes": {"name": "app", "execution-mode": "remote"}}}
    created = client.post(f"/api/v2/organizations/{name}/workspaces", headers=headers, json=ws)
    assert created.status_code == 201, created.text
    runner_token = container.runner_credentials.runner_token(name)
    return RunEnv(container, client, headers, created.json()["data"]["id"], runner_token, name)


def policy_set(env: RunEnv, name: str) -> None:
    """A policy set of one policy (`name`) on the environment's workspace."""
    body = {"data": {"type": "policies", "attributes": {"name": name, "kind": "opa", "enforcement-level": "mandatory",
            "query": f"data.terraform.policies.{name}.deny"}}}  # fmt: skip
    policy = env.api("POST", f"/organizations/{env.organization}/policies", body).json()["data"]["id"]
    text = DENY_NULL.replace("terraform.policies.no_null", f"terraform.policies.{name}").encode()
    assert env.client.put(f"/api/v2/policies/{policy}/upload", content=text, headers=env.headers).status_code == 200
    relationships = {"policies": {"data": [{"type": "policies", "id": policy}]},
                     "workspaces": {"data": [{"type": "workspaces", "id": env.workspace_id}]}}  # fmt: skip
    body = {"data": {"type": "policy-sets", "attributes": {"name": f"set-{name}", "kind": "opa"},
            "relationships": relationships}}  # fmt: skip
    assert env.api("POST", f"/organizations/{env.organization}/policy-sets", body).status_code == 201


def evaluation_status(env: RunEnv, run: dict[str, Any]) -> str | None:
    [found] = env.container.policy_evaluations.of_run(run["id"]) or [None]
    return found.status if found else None


@pytest.fixture
def stack(monkeypatch: pytest.MonkeyPatch) -> Iterator[SimpleNamespace]:
    """A memory container whose events go through a queue that the embedded server's events worker consumes."""
    monkeypatch.setattr(evaluation_worker, "DEFER_S", 1)
    queue, engine = MemoryEventQueue(), BlockingEngine()
    settings = Settings(table_name="memory", blob_bucket="memory", url_signing_secret="sign",
                        policy_concurrency_per_organization=CAP)  # fmt: skip
    container = Container(settings=settings, table=HeldReadsTable(MemoryTable()), blobs=MemoryBlobs(),
                          publisher=queue, event_queue=queue, remote_policy_engine=engine)  # fmt: skip
    running = SimpleNamespace(container=container, stopping=threading.Event(), engine=engine)
    worker = threading.Thread(target=workers.events, args=(running,), name="test-events-worker")
    worker.start()
    try:
        yield running
    finally:
        engine.release.set()
        running.stopping.set()
        worker.join(30)
        assert not worker.is_alive()


def test_a_slow_organization_holds_at_most_its_slots_and_another_completes_while_it_waits(stack: Any) -> None:
    container, engine = stack.container, stack.engine
    user = container.accounts.create_user("alice", "alice@example.com")
    token = container.accounts.issue_token(PrincipalKind.USER, user.id).secret
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/vnd.api+json"}
    client = TestClient(create_app(container))
    hog, victim = (
        organization_env(container, client, headers, "hog"),
        organization_env(container, client, headers, "victim"),
    )
    for n in range(HOG_SETS):
        policy_set(hog, f"hog{n}")
    policy_set(victim, "fair")

    hog_run = plan_run(hog, "null_resource", handle=False)
    poll(lambda: engine.inside["hog"] >= CAP, "the hog's sets to fill its slots")
    victim_run = plan_run(victim, "aws_s3_bucket", handle=False)
    poll(lambda: evaluation_status(victim, victim_run) == "passed", "the victim's evaluation, while the hog's wait")
    poll(lambda: victim.run(victim_run["id"])["attributes"]["status"] == "post_plan_completed", "the victim's run")
    assert engine.inside["hog"] == CAP and not engine.release.is_set()  # the hog's sets were still held meanwhile
    waiting = {e["policy_set_id"] for e in container.event_queue.events if e["type"] == evaluation_worker.SET_QUEUED}
    assert len(waiting) == HOG_SETS  # every one of its sets is still to do, and all but CAP wait on the queue
    assert container.policy_evaluation_worker.slots.held("hog") == CAP

    engine.release.set()
    poll(lambda: evaluation_status(hog, hog_run) == "passed", "the hog's ten sets, once released")
    assert engine.most["hog"] == CAP  # never more than its slots, across the whole run
    assert container.policy_evaluation_worker.slots.held("hog") == 0
    assert len(container.policy_evaluations.of_run(hog_run["id"])) == 1


def test_a_slot_is_given_back_and_one_held_by_a_dead_worker_expires(monkeypatch: pytest.MonkeyPatch) -> None:
    from terrace.domain import clock
    from terrace.services.policies.evaluation_slots import EvaluationSlots
    from terrace.services.policies.store_evaluations import EvaluationStore

    now = [1_000_000.0]
    monkeypatch.setattr(clock, "epoch", lambda: now[0])
    slots = EvaluationSlots(EvaluationStore(MemoryTable()), per_organization=2, lease_s=43)
    assert slots.acquire("acme", "psout-a-000") and slots.acquire("acme", "psout-a-001")
    assert not slots.acquire("acme", "psout-a-002")  # full
    assert not slots.acquire("acme", "psout-a-000")  # the same set delivered twice is evaluated once at a time
    assert slots.acquire("other", "psout-b-000")  # another organization's slots are its own
    slots.release("acme", "psout-a-001")
    assert slots.acquire("acme", "psout-a-002")
    now[0] += 45  # the worker holding the others died: their leases run out
    assert slots.held("acme") == 0 and slots.acquire("acme", "psout-a-003")
