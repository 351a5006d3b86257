"""A run's OPA policy evaluation as a post_plan task stage (the events worker's job): deny/allow, advisory reported,
mandatory stops the run (an override allowed when its set is overridable, to those with manage-policy-overrides),
errors from the engine, and the results as HCP and older clients (policy checks) read them."""

from __future__ import annotations

import json
from typing import Any

from policy_helpers import call, create_policy, create_set, deliver, member, plan_run
from run_helpers import RunEnv, make_run_env
from table_items import memory_items
from terrace.adapters.memory_events import MemoryEventPublisher
from terrace.domain.principal import PrincipalKind

LOOP = """package terraform.policies.slow
import rego.v1
deny contains "never" if {
    some i in numbers.range(1, 100000)
    some j in numbers.range(1, 100000)
    i == j + 100000000
}
"""


def _stage(env: RunEnv, run: dict[str, Any]) -> dict[str, Any]:
    [stage] = env.api("GET", f"/runs/{run['id']}/task-stages?include=policy_evaluations").json()["data"]
    return dict(stage)


def _status(env: RunEnv, run: dict[str, Any]) -> str:
    return str(env.run(run["id"])["attributes"]["status"])


def test_a_mandatory_failure_stops_the_run_and_its_messages_are_shown() -> None:
    env = make_run_env()
    create_set(env, "guard", policies=(create_policy(env, "no_null"),), workspaces=(env.workspace_id,))
    run = plan_run(env, "null_resource", "aws_s3_bucket")
    assert _status(env, run) == "errored"  # the set is not overridable
    stage = _stage(env, run)
    assert stage["attributes"]["stage"] == "post_plan" and stage["attributes"]["status"] == "failed"
    [ref] = stage["relationships"]["policy-evaluations"]["data"]
    listed = env.api("GET", f"/task-stages/{stage['id']}/policy-evaluations").json()["data"]
    assert [e["id"] for e in listed] == [ref["id"]]
    attrs = listed[0]["attributes"]
    assert attrs["status"] == "failed" and attrs["policy-kind"] == "opa"
    assert attrs["result-count"] == {"advisory-failed": 0, "mandatory-failed": 1, "passed": 0, "errored": 0}
    assert listed[0]["relationships"]["policy-attachable"]["data"] == {"id": stage["id"], "type": "task-stages"}
    [outcome] = env.api("GET", f"/policy-evaluations/{ref['id']}/policy-set-outcomes").json()["data"]
    [policy] = outcome["attributes"]["outcomes"]
    assert (policy["policy_name"], policy["status"], policy["enforcement_level"]) == ("no_null", "failed", "mandatory")
    assert policy["output"] == [{"result": ["null_resource.r0 is a null_resource (workspace app)"]}]
    assert outcome["attributes"]["policy-set-name"] == "guard" and outcome["attributes"]["overridable"] is False
    assert env.api("GET", f"/policy-set-outcomes/{outcome['id']}").json()["data"]["id"] == outcome["id"]
    passed_only = env.api("GET", f"/policy-evaluations/{ref['id']}/policy-set-outcomes?filter[0][status]=passed")
    assert passed_only.json()["data"][0]["attributes"]["outcomes"] == []
    [check] = env.api("GET", f"/runs/{run['id']}/policy-checks").json()["data"]
    assert check["attributes"]["status"] == "hard_failed" and check["attributes"]["result"]["result"] is False


def test_an_overridable_failure_awaits_an_allowed_override() -> None:
    env = make_run_env()
    policy_id = create_policy(env, "no_null")
    create_set(env, "guard", policies=(policy_id,), workspaces=(env.workspace_id,), overridable=True)
    run = plan_run(env, "null_resource")
    assert _status(env, run) == "post_plan_awaiting_decision"
    stage = _stage(env, run)
    assert stage["attributes"]["status"] == "awaiting_override"
    [check] = env.api("GET", f"/runs/{run['id']}/policy-checks").json()["data"]
    assert check["attributes"]["status"] == "soft_failed"
    assert check["attributes"]["actions"] == {"is-overridable": True}
    assert check["attributes"]["permissions"] == {"can-override": True}  # alice owns acme
    reader = member(env, "reader", **{"read-workspaces": True})
    as_reader = call(env, reader, "GET", f"/policy-checks/{check['id']}").json()["data"]
    assert as_reader["attributes"]["permissions"] == {"can-override": False}
    assert call(env, reader, "POST", f"/task-stages/{stage['id']}/actions/override", {}).status_code == 403
    output = env.api("GET", f"/policy-checks/{check['id']}/output").text
    assert "no_null (mandatory): failed" in output and "- null_resource.r0 is a null_resource" in output
    overrider = member(env, "overrider", **{"read-workspaces": True, "manage-policy-overrides": True})
    assert call(env, overrider, "POST", f"/policy-checks/{check['id']}/actions/override").status_code == 200
    deliver(env)
    assert env.api("GET", f"/policy-checks/{check['id']}").json()["data"]["attributes"]["status"] == "overridden"
    assert _status(env, run) == "post_plan_completed"  # awaiting its confirmation, as any planned run
    assert env.api("POST", f"/runs/{run['id']}/actions/apply", {}).status_code == 202


def test_advisory_failures_are_reported_and_the_run_goes_on() -> None:
    env = make_run_env()
    ps = create_set(env, "advice", policies=(create_policy(env, "no_null", "advisory"),), **{"global": True})
    assert ps["attributes"]["global"] is True
    run = plan_run(env, "null_resource")
    assert _status(env, run) == "post_plan_completed"
    [evaluation] = env.api("GET", f"/task-stages/{_stage(env, run)['id']}/policy-evaluations").json()["data"]
    assert evaluation["attributes"]["status"] == "passed"
    assert evaluation["attributes"]["result-count"]["advisory-failed"] == 1


def test_an_allowed_plan_passes_and_an_excluded_workspace_is_not_evaluated() -> None:
    env = make_run_env()
    ps = create_set(env, "guard", policies=(create_policy(env, "no_null"),), workspaces=(env.workspace_id,))
    run = plan_run(env, "aws_s3_bucket")
    assert _status(env, run) == "post_plan_completed" and _stage(env, run)["attributes"]["status"] == "passed"
    body = {"data": [{"type": "workspaces", "id": env.workspace_id}]}
    env.api("POST", f"/policy-sets/{ps['id']}/relationships/workspace-exclusions", body)
    assert env.api("POST", f"/runs/{run['id']}/actions/discard", {}).status_code == 202
    excluded = plan_run(env, "null_resource")
    assert _status(env, excluded) == "cost_estimated"  # nothing took part: the run is as without stages
    assert env.api("GET", f"/runs/{excluded['id']}/task-stages").json()["data"] == []
    assert env.api("GET", f"/runs/{excluded['id']}/policy-checks").json()["data"] == []


def test_a_policy_that_loops_errors_its_evaluation_not_the_server() -> None:
    env = make_run_env(policy_timeout_s=1.0)
    policy_id = create_policy(env, "slow", rego=LOOP)
    create_set(env, "guard", policies=(policy_id,), workspaces=(env.workspace_id,), overridable=True)
    run = plan_run(env, "null_resource")
    assert _status(env, run) == "errored"  # a mandatory policy that could not decide: no override
    [ref] = _stage(env, run)["relationships"]["policy-evaluations"]["data"]
    [outcome] = env.api("GET", f"/policy-evaluations/{ref['id']}/policy-set-outcomes").json()["data"]
    assert outcome["attributes"]["error"] in (  # whichever limit a loaded machine reaches first
        "the policy evaluation took longer than 1 s and was stopped",
        "the policy evaluation used more CPU time than allowed and was stopped",
    )
    assert outcome["attributes"]["outcomes"][0]["status"] == "errored"
    assert outcome["attributes"]["result_count"]["errored"] == 1


def test_results_are_hidden_from_strangers() -> None:
    env = make_run_env()
    create_set(env, "guard", policies=(create_policy(env, "no_null"),), workspaces=(env.workspace_id,))
    run = plan_run(env, "null_resource")
    stage = _stage(env, run)
    [ref] = stage["relationships"]["policy-evaluations"]["data"]
    stranger = env.container.accounts.create_user("stranger", "s@example.com")
    token = env.container.accounts.issue_token(PrincipalKind.USER, stranger.id).secret
    for path in (f"/policy-evaluations/{ref['id']}/policy-set-outcomes", f"/runs/{run['id']}/policy-checks",
                 f"/task-stages/{stage['id']}/policy-evaluations", "/task-stages/ts-nosuchstage1234-2"):  # fmt: skip
        assert call(env, token, "GET", path).status_code == 404
    assert env.api("GET", "/task-stages/ts-nosuchstage1234-2/policy-evaluations").status_code == 404


def test_deleting_the_organization_deletes_its_policies_sets_versions_and_evaluations() -> None:
    env = make_run_env()
    policy_id = create_policy(env, "no_null")
    ps = create_set(env, "guard", policies=(policy_id,), workspaces=(env.workspace_id,))
    param = {"data": {"type": "vars", "attributes": {"key": "k", "value": "v", "category": "policy-set"}}}
    param_id = env.api("POST", f"/policy-sets/{ps['id']}/parameters", param).json()["data"]["id"]
    version = env.api("POST", f"/policy-sets/{ps['id']}/versions").json()["data"]
    run = plan_run(env, "null_resource")
    [ref] = _stage(env, run)["relationships"]["policy-evaluations"]["data"]
    [outcome] = env.api("GET", f"/policy-evaluations/{ref['id']}/policy-set-outcomes").json()["data"]
    ids = {policy_id, ps["id"], param_id, version["id"], ref["id"], outcome["id"]}
    items = memory_items(env.container.table)
    assert env.api("DELETE", "/organizations/acme").status_code == 204
    assert [item for item in items.values() if any(i in json.dumps(item) for i in ids)] == []
    assert [k for k in items if "policynames" in str(k) or "polsetnames" in str(k)] == []


def test_a_run_lists_its_policy_checks_except_to_the_cloud_block() -> None:
    """terraform's `remote` backend reads a run's `policy-checks` only; the `cloud` block prints the task stage's
    policy evaluations and then any policy check, so it is given none (HCP shows OPA only as task stages)."""
    env = make_run_env()
    create_set(env, "guard", policies=(create_policy(env, "no_null", "advisory"),), workspaces=(env.workspace_id,))
    run = plan_run(env, "null_resource")
    [check] = env.api("GET", f"/runs/{run['id']}/policy-checks").json()["data"]
    for path in (f"/runs/{run['id']}", f"/workspaces/{env.workspace_id}/runs"):
        document = env.api("GET", path).json()["data"]
        listed = document if isinstance(document, dict) else document[0]
        assert listed["relationships"]["policy-checks"]["data"] == [{"type": "policy-checks", "id": check["id"]}]
        cloud = env.client.get(f"/api/v2{path}", headers={**env.headers, "X-Terraform-Integration": "cloud"})
        listed = cloud.json()["data"] if path.startswith("/runs") else cloud.json()["data"][0]
        assert listed["relationships"]["policy-checks"]["data"] == []
        assert listed["relationships"]["task-stages"]["data"]  # where the cloud block reads them
    plain = make_run_env()  # a run without a post-plan stage costs no read and lists none
    other = plan_run(plain, "null_resource")
    assert plain.api("GET", f"/runs/{other['id']}").json()["data"]["relationships"]["policy-checks"]["data"] == []


def test_a_check_is_done_only_once_its_verdict_reached_the_run() -> None:
    """The `remote` backend waits on the check's output while it is pending, then reads the run and applies it only
    when it is confirmable: the check stays pending until the stage's verdict has moved the run."""
    env = make_run_env()
    create_set(env, "guard", policies=(create_policy(env, "no_null", "advisory"),), workspaces=(env.workspace_id,))
    run = plan_run(env, "null_resource", handle=False)
    publisher = env.container.publisher
    assert isinstance(publisher, MemoryEventPublisher)
    while pending := [e for e in publisher.events if e["type"] != "task_stage.progressed"]:
        for event in pending:  # the evaluation runs; its verdict does not reach the run yet
            publisher.events.remove(event)
            env.container.events.handle(event)
    [check] = env.api("GET", f"/runs/{run['id']}/policy-checks").json()["data"]
    [evaluation] = env.api("GET", f"/task-stages/{_stage(env, run)['id']}/policy-evaluations").json()["data"]
    assert evaluation["attributes"]["status"] == "passed"
    assert _status(env, run) == "post_plan_running" and check["attributes"]["status"] == "pending"
    deliver(env)
    assert _status(env, run) == "post_plan_completed"
    check = env.api("GET", f"/policy-checks/{check['id']}").json()["data"]
    assert check["attributes"]["status"] == "passed" and check["attributes"]["result"]["advisory-failed"] == 1


def test_a_check_whose_run_ended_before_its_evaluation_is_unreachable() -> None:
    env = make_run_env()
    create_set(env, "guard", policies=(create_policy(env, "no_null"),), workspaces=(env.workspace_id,))
    run = env.create_run(env.upload_config())  # the evaluation is listed, pending, from the run's creation
    [check] = env.api("GET", f"/runs/{run['id']}/policy-checks").json()["data"]
    assert check["attributes"]["status"] == "queued"
    assert env.api("POST", f"/runs/{run['id']}/actions/cancel", {}).status_code == 202
    deliver(env)
    assert _status(env, run) in ("canceled", "force_canceled", "errored")
    assert env.api("GET", f"/policy-checks/{check['id']}").json()["data"]["attributes"]["status"] == "unreachable"
    for bad in ("polchk-nosuchcheck12-2", "polchk-", "pol-x"):
        assert env.api("GET", f"/policy-checks/{bad}").json()["errors"][0]["status"] == "404"
