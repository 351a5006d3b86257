"""A run's OPA evaluation is bounded per invocation of the events function (30 s on AWS): one policy set per event,
each event saying how long it may take (`needs_ms`, the engine's limit and the work around it), and the function
putting back an event it has no time left for. Several sets that each hit the time limit still end the stage with
every set errored, over several invocations, none of them past its budget. An evaluation whose events were lost is
concluded at its deadline, so its run never waits forever."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from policy_helpers import create_policy, create_set, deliver, plan_run
from run_helpers import RunEnv, make_run_env
from terrace.adapters.memory_events import MemoryEventPublisher
from terrace.domain import clock
from terrace.services.policies.evaluation_worker import QUEUED, SET_QUEUED

HANDLER = Path(__file__).resolve().parents[2] / "functions" / "events" / "handler.py"
INVOCATION_MS = 9_000  # room for two sets of 1 s (each needs 1 s + 3 s) per invocation: the third waits its turn
LIMITS = ("the policy evaluation took longer than 1 s and was stopped",
          "the policy evaluation used more CPU time than allowed and was stopped")  # fmt: skip
LOOP = """package terraform.policies.{name}
import rego.v1
deny contains "never" if {{
    some i in numbers.range(1, 100000)
    some j in numbers.range(1, 100000)
    i == j + 100000000
}}
"""


@pytest.fixture
def events_function(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "1")
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "TerraceTest")
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "test")
    spec = importlib.util.spec_from_file_location("terrace_fn_events_budget", HANDLER)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _record(n: int, event: dict[str, Any]) -> dict[str, Any]:
    return {
        "messageId": f"m{n}", "receiptHandle": "h", "body": json.dumps(event), "attributes": {},
        "messageAttributes": {}, "md5OfBody": "", "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:1:events", "awsRegion": "us-east-1",
    }  # fmt: skip


def _slow_sets(env: RunEnv, count: int) -> None:
    for n in range(count):
        name = f"slow{n}"
        policy = create_policy(env, name, rego=LOOP.format(name=name))
        create_set(env, f"set{n}", policies=(policy,), workspaces=(env.workspace_id,))


def test_sets_that_each_hit_the_time_limit_end_the_stage_over_bounded_invocations(
    events_function: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = make_run_env(policy_timeout_s=1.0)
    _slow_sets(env, 3)
    run = plan_run(env, "null_resource", handle=False)
    publisher = env.container.publisher
    assert isinstance(publisher, MemoryEventPublisher)
    monkeypatch.setattr(events_function, "_get_container", lambda: env.container)

    # Each invocation has INVOCATION_MS; a set's event is charged what it says it may take (its worst case).
    left = [INVOCATION_MS]
    handle = env.container.events.handle

    def charged(message: dict[str, Any]) -> None:
        handle(message)
        left[0] -= int(message.get("needs_ms") or 0)

    monkeypatch.setattr(env.container.events, "handle", charged)
    context = SimpleNamespace(function_name="events", memory_limit_in_mb=1024, aws_request_id="req",
                              invoked_function_arn="arn:aws:lambda:us-east-1:1:function:events",
                              get_remaining_time_in_millis=lambda: left[0])  # fmt: skip
    put_back = 0
    for _ in range(20):  # the queue, drained in batches of 10 as SQS hands them to the function
        batch, publisher.events[:] = list(publisher.events[:10]), publisher.events[10:]
        if not batch:
            break
        left[0], before = INVOCATION_MS, len(publisher.events)
        answer = events_function.lambda_handler({"Records": [_record(i, e) for i, e in enumerate(batch)]}, context)
        assert answer["batchItemFailures"] == []  # no record failed: none timed the function out
        assert left[0] >= 0  # no set began with less time left than it may take
        put_back += sum(1 for e in publisher.events[before:] if e in batch)
    else:
        pytest.fail("the events never ran out")
    assert put_back >= 1  # a set waited for the next invocation rather than overrun this one

    assert env.run(run["id"])["attributes"]["status"] == "errored"
    [stage] = env.api("GET", f"/runs/{run['id']}/task-stages").json()["data"]
    assert stage["attributes"]["status"] == "errored"
    [ref] = stage["relationships"]["policy-evaluations"]["data"]
    [listed] = env.api("GET", f"/task-stages/{stage['id']}/policy-evaluations").json()["data"]
    evaluation = listed["attributes"]
    assert evaluation["status"] == "errored" and evaluation["result-count"]["errored"] == 3
    outcomes = env.api("GET", f"/policy-evaluations/{ref['id']}/policy-set-outcomes").json()["data"]
    assert sorted(o["attributes"]["policy-set-name"] for o in outcomes) == ["set0", "set1", "set2"]
    for outcome in outcomes:
        assert outcome["attributes"]["error"] in LIMITS
        assert [p["status"] for p in outcome["attributes"]["outcomes"]] == ["errored"]


def test_a_repeated_set_event_is_not_evaluated_twice() -> None:
    env = make_run_env()
    create_set(env, "guard", policies=(create_policy(env, "no_null"),), workspaces=(env.workspace_id,))
    publisher = env.container.publisher
    assert isinstance(publisher, MemoryEventPublisher)
    run = plan_run(env, "null_resource", handle=False)
    [queued] = [e for e in publisher.events if e["type"] == QUEUED]
    env.container.events.handle(queued)
    env.container.events.handle(queued)  # delivered twice: started once
    set_events = [e for e in publisher.events if e["type"] == SET_QUEUED]
    assert len(set_events) == 1
    env.container.events.handle(set_events[0])
    stored = env.container.table.get(set_events[0]["evaluation_id"], "poleval")
    assert stored is not None and stored["status"] == "failed"
    env.container.events.handle(set_events[0])  # a repeated delivery changes nothing
    assert env.container.table.get(set_events[0]["evaluation_id"], "poleval") == stored
    deliver(env)
    assert env.run(run["id"])["attributes"]["status"] == "errored"


def test_an_evaluation_whose_events_were_lost_is_concluded_at_its_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    env = make_run_env()
    for name in ("first", "lost"):
        create_set(env, name, policies=(create_policy(env, f"p_{name}"),), workspaces=(env.workspace_id,))
    publisher = env.container.publisher
    assert isinstance(publisher, MemoryEventPublisher)
    run = plan_run(env, "aws_s3_bucket", handle=False)
    [queued] = [e for e in publisher.events if e["type"] == QUEUED]
    env.container.events.handle(queued)
    first, lost = [e for e in publisher.events if e["type"] == SET_QUEUED]
    env.container.events.handle(first)  # the other set's event never arrives
    publisher.events.clear()
    env.container.reaper.reap_once()
    assert env.run(run["id"])["attributes"]["status"] == "post_plan_running"  # still within its deadline

    now = clock.epoch()
    monkeypatch.setattr(clock, "epoch", lambda: now + 601)
    env.container.reaper.reap_once()  # the reaper's tick asks the stage again
    deliver(env)
    assert env.run(run["id"])["attributes"]["status"] == "errored"  # a mandatory set that never ran errors
    outcomes = env.api("GET", f"/policy-evaluations/{lost['evaluation_id']}/policy-set-outcomes").json()["data"]
    by_set = {o["attributes"]["policy-set-name"]: o["attributes"] for o in outcomes}
    assert by_set["first"]["error"] == "" and by_set["first"]["outcomes"][0]["status"] == "passed"
    assert by_set["lost"]["error"] == "the policy set was not evaluated within 600 s"
    assert by_set["lost"]["outcomes"][0]["status"] == "errored"


def test_a_policy_time_limit_must_leave_room_in_one_invocation() -> None:
    """A set's evaluation and the work around it fit in the events function's 30 s: at most 20 s."""
    from pydantic import ValidationError
    from terrace.config import Settings

    assert Settings(table_name="t", blob_bucket="b", policy_timeout_s=20).policy_timeout_s == 20
    for bad in (25, 0):
        with pytest.raises(ValidationError):
            Settings(table_name="t", blob_bucket="b", policy_timeout_s=bad)
