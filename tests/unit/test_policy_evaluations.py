"""A run's OPA policy evaluation through the task-stage participant port (a stage context as the task-stage service
gives it), run by the events worker's job: deny/allow, advisory reported, mandatory blocks (an override allowed
when its set is overridable), errors from the engine, and the results as HCP and older clients read them."""

from __future__ import annotations

import json
from typing import Any

from policy_helpers import call, create_policy, create_set, member
from run_helpers import RunEnv, make_run_env
from terrace.services.policies.evaluations import QUEUED
from terrace.services.runs.stage_participants import STAGE_PROGRESSED, StageContext

PLAN_KEY = "plans/test/plan.json"
LOOP = """package terraform.policies.slow
import rego.v1
deny contains "never" if {
    some i in numbers.range(1, 100000)
    some j in numbers.range(1, 100000)
    i == j + 100000000
}
"""


def _context(env: RunEnv, stage_id: str = "ts-test1234567890ab", *types: str) -> StageContext:
    cv = env.upload_config()
    run_id = env.create_run(cv)["id"]
    changes = [{"address": f"{t}.r{i}", "type": t, "change": {"actions": ["create"]}} for i, t in enumerate(types)]
    env.blobs.put(PLAN_KEY, json.dumps({"format_version": "1.2", "resource_changes": changes}).encode())
    run = env.container.run_store.load(run_id)
    return StageContext(run=run, stage_id=stage_id, stage="post_plan", plan_json_key=PLAN_KEY)


def _work(env: RunEnv) -> list[dict[str, Any]]:
    """The events worker: hands every queued evaluation to its handler; returns what they published."""
    published = env.container.publisher.events  # type: ignore[attr-defined]
    for event in [e for e in published if e["type"] == QUEUED]:
        env.container.events.handle(event)
    return [e for e in published if e["type"] == STAGE_PROGRESSED]


def test_a_mandatory_failure_blocks_and_its_messages_are_shown() -> None:
    env = make_run_env()
    create_set(env, "guard", policies=(create_policy(env, "no_null"),), workspaces=(env.workspace_id,))
    participant = env.container.policy_participant
    context = _context(env, "ts-test1234567890ab", "null_resource", "aws_s3_bucket")
    [evaluation_id] = participant.begin(context)
    assert participant.begin(context) == [evaluation_id]  # asked again: the same evaluation
    assert participant.verdict(context) == "pending"
    progressed = _work(env)
    assert progressed == [{"type": STAGE_PROGRESSED, "stage_id": context.stage_id, "run_id": context.run.id}]
    assert participant.verdict(context) == "failed"  # the set is not overridable
    listed = env.api("GET", f"/task-stages/{context.stage_id}/policy-evaluations").json()["data"]
    assert [e["id"] for e in listed] == [evaluation_id]
    attrs = listed[0]["attributes"]
    assert attrs["status"] == "failed" and attrs["policy-kind"] == "opa"
    assert attrs["result-count"] == {"advisory-failed": 0, "mandatory-failed": 1, "passed": 0, "errored": 0}
    assert listed[0]["relationships"]["policy-attachable"]["data"] == {"id": context.stage_id, "type": "task-stages"}
    [outcome] = env.api("GET", f"/policy-evaluations/{evaluation_id}/policy-set-outcomes").json()["data"]
    [policy] = outcome["attributes"]["outcomes"]
    assert (policy["policy_name"], policy["status"], policy["enforcement_level"]) == ("no_null", "failed", "mandatory")
    assert policy["output"] == [{"result": ["null_resource.r0 is a null_resource (workspace app)"]}]
    assert outcome["attributes"]["policy-set-name"] == "guard" and outcome["attributes"]["overridable"] is False
    assert env.api("GET", f"/policy-set-outcomes/{outcome['id']}").json()["data"]["id"] == outcome["id"]
    passed_only = env.api("GET", f"/policy-evaluations/{evaluation_id}/policy-set-outcomes?filter[0][status]=passed")
    assert passed_only.json()["data"][0]["attributes"]["outcomes"] == []


def test_an_overridable_set_awaits_an_override_and_the_override_passes() -> None:
    env = make_run_env()
    policy_id = create_policy(env, "no_null")
    create_set(env, "guard", policies=(policy_id,), workspaces=(env.workspace_id,), overridable=True)
    participant = env.container.policy_participant
    context = _context(env, "ts-test1234567890ab", "null_resource")
    participant.begin(context)
    _work(env)
    assert participant.verdict(context) == "awaiting_override"
    [check] = env.api("GET", f"/runs/{context.run.id}/policy-checks").json()["data"]
    assert check["attributes"]["status"] == "soft_failed"
    assert check["attributes"]["actions"] == {"is-overridable": True}
    assert check["attributes"]["permissions"] == {"can-override": True}  # alice owns acme
    reader = member(env, "reader", **{"read-workspaces": True})
    as_reader = call(env, reader, "GET", f"/policy-checks/{check['id']}").json()["data"]
    assert as_reader["attributes"]["permissions"] == {"can-override": False}
    output = env.api("GET", f"/policy-checks/{check['id']}/output").text
    assert "no_null (mandatory): failed" in output and "- null_resource.r0 is a null_resource" in output
    participant.overridden(context)
    assert participant.verdict(context) == "passed"
    assert env.api("GET", f"/policy-checks/{check['id']}").json()["data"]["attributes"]["status"] == "overridden"


def test_advisory_failures_are_reported_and_pass() -> None:
    env = make_run_env()
    ps = create_set(env, "advice", policies=(create_policy(env, "no_null", "advisory"),), **{"global": True})
    assert ps["attributes"]["global"] is True
    participant = env.container.policy_participant
    context = _context(env, "ts-test1234567890ab", "null_resource")
    participant.begin(context)
    _work(env)
    assert participant.verdict(context) == "passed"
    [evaluation] = env.api("GET", f"/task-stages/{context.stage_id}/policy-evaluations").json()["data"]
    assert evaluation["attributes"]["status"] == "passed"
    assert evaluation["attributes"]["result-count"]["advisory-failed"] == 1


def test_an_allowed_plan_passes_and_an_excluded_workspace_is_not_evaluated() -> None:
    env = make_run_env()
    policy_id = create_policy(env, "no_null")
    ps = create_set(env, "guard", policies=(policy_id,), workspaces=(env.workspace_id,))
    participant = env.container.policy_participant
    context = _context(env, "ts-test1234567890ab", "aws_s3_bucket")
    participant.begin(context)
    _work(env)
    assert participant.verdict(context) == "passed"
    body = {"data": [{"type": "workspaces", "id": env.workspace_id}]}
    env.api("POST", f"/policy-sets/{ps['id']}/relationships/workspace-exclusions", body)
    assert participant.begin(_context(env, "ts-other1234567890ab", "null_resource")) == []
    assert participant.begin(StageContext(context.run, "ts-pre1234567890abcd", "pre_plan")) == []  # after the plan


def test_a_policy_that_loops_errors_its_evaluation_not_the_server() -> None:
    env = make_run_env(policy_timeout_s=1.0)
    policy_id = create_policy(env, "slow", rego=None)
    env.client.put(f"/api/v2/policies/{policy_id}/upload", content=LOOP, headers=env.headers)
    create_set(env, "guard", policies=(policy_id,), workspaces=(env.workspace_id,), overridable=True)
    participant = env.container.policy_participant
    context = _context(env, "ts-test1234567890ab", "null_resource")
    participant.begin(context)
    _work(env)
    assert participant.verdict(context) == "errored"  # a mandatory policy that could not decide: no override
    [evaluation_id] = [e.id for e in env.container.policy_evaluations.of_stage(context.stage_id)]
    [outcome] = env.api("GET", f"/policy-evaluations/{evaluation_id}/policy-set-outcomes").json()["data"]
    assert outcome["attributes"]["error"] == "the policy evaluation took longer than 1 s and was stopped"
    assert outcome["attributes"]["outcomes"][0]["status"] == "errored"
    assert outcome["attributes"]["result_count"]["errored"] == 1


def test_results_are_hidden_from_strangers() -> None:
    env = make_run_env()
    create_set(env, "guard", policies=(create_policy(env, "no_null"),), workspaces=(env.workspace_id,))
    context = _context(env, "ts-test1234567890ab", "null_resource")
    [evaluation_id] = env.container.policy_participant.begin(context)
    _work(env)
    stranger = env.container.accounts.create_user("stranger", "s@example.com")
    from terrace.domain.principal import PrincipalKind

    token = env.container.accounts.issue_token(PrincipalKind.USER, stranger.id).secret
    for path in (f"/policy-evaluations/{evaluation_id}/policy-set-outcomes", f"/runs/{context.run.id}/policy-checks",
                 f"/task-stages/{context.stage_id}/policy-evaluations"):  # fmt: skip
        assert call(env, token, "GET", path).status_code == 404
