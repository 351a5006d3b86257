"""The actions read API (HCP Terraform's `terraform-actions`, terraform 1.14+): what a plan's JSON says of actions
(declared in the configuration, root module and module calls; invocations planned, per action and method), as
the runner reports it when the plan finishes, and the API's list, show and run summary read from the workspace's
runs, with HCP's filters, ids and statuses."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from run_helpers import RunEnv, make_run_env
from runner_fakes import FakeApi, fake_terraform, make_spec, runner_config, tarball
from terrace.domain import terraform_actions as model
from terrace.domain.jobs import Operation
from terrace.domain.principal import PrincipalKind
from terrace.runner.execution import JobExecutor

PLAN_JSON = {
    "configuration": {
        "root_module": {
            "actions": [
                {"address": "action.aws_lambda_invoke.ping", "type": "aws_lambda_invoke", "name": "ping",
                 "provider_config_key": "aws"},
                {"address": "action.aws_lambda_invoke.each", "provider_config_key": "aws",
                 "for_each_expression": {"references": ["var.keys"]}},
            ],
            "module_calls": {"utils": {"module": {"actions": [
                {"address": "action.ansible_playbook.cleanup", "provider_config_key": "utils:ansible",
                 "count_expression": {"constant_value": 2}}]}}},
        }
    },
    "action_invocations": [
        {"address": "action.aws_lambda_invoke.ping", "type": "aws_lambda_invoke", "invoke_action_trigger": {}},
        {"address": "module.utils.action.ansible_playbook.cleanup[0]", "lifecycle_action_trigger": {
            "triggering_resource_address": "aws_instance.a", "action_trigger_event": "AfterCreate",
            "action_trigger_block_index": 0, "actions_list_index": 0}},
        {"address": "module.utils.action.ansible_playbook.cleanup[1]", "lifecycle_action_trigger": {
            "triggering_resource_address": "aws_instance.a", "action_trigger_event": "AfterCreate",
            "action_trigger_block_index": 0, "actions_list_index": 1}},
    ],
}  # fmt: skip


def test_a_plan_json_tells_the_declared_actions_and_the_planned_invocations():
    declared = {a.address: a for a in model.declared(PLAN_JSON)}
    assert set(declared) == {
        "action.aws_lambda_invoke.ping",
        "action.aws_lambda_invoke.each",
        "module.utils.action.ansible_playbook.cleanup",
    }
    assert declared["action.aws_lambda_invoke.ping"].module_address == model.ROOT_MODULE
    assert declared["action.aws_lambda_invoke.ping"].provider == "aws"
    assert declared["action.aws_lambda_invoke.each"].instance_type == "for_each"
    cleanup = declared["module.utils.action.ansible_playbook.cleanup"]
    assert (cleanup.module_address, cleanup.provider, cleanup.instance_type) == ("module.utils", "ansible", "count")
    planned = {p.address: (p.direct, p.lifecycle) for p in model.planned(PLAN_JSON)}
    assert planned == {"action.aws_lambda_invoke.ping": (1, 0), "module.utils.action.ansible_playbook.cleanup": (0, 2)}
    assert model.declared({}) == [] and model.planned({"action_invocations": "x"}) == []
    many = {"action_invocations": [{"address": f"action.t.a{n}", "invoke_action_trigger": {}} for n in range(500)]}
    assert len(model.planned(many)) == model.MAX_ACTIONS  # bounded: the run item stays small


def test_an_action_id_names_its_workspace():
    action_id = model.action_id("ws-jGfZLwJXE5vqbPpK", "action.a.b")
    assert action_id.startswith("action-") and model.workspace_of(action_id) == "ws-jGfZLwJXE5vqbPpK"
    assert action_id == model.action_id("ws-jGfZLwJXE5vqbPpK", "action.a.b") != model.action_id("ws-x", "action.a.b")
    assert model.workspace_of("action-short") is None and model.workspace_of("run-abc") is None


# through the runner protocol and the API ----------------------------------------------------------------------
def _finish(env: RunEnv, spec: dict[str, Any], **report: Any) -> Any:
    body = {"runner_id": "r1", "status": "finished", "has_changes": True, **report}
    return env.runner("POST", f"/jobs/{spec['job_id']}/finish", json=body)


@pytest.fixture(scope="module")
def env() -> RunEnv:
    env = make_run_env()
    cv = env.upload_config()
    reported = {
        "declared_actions": [a.model_dump() for a in model.declared(PLAN_JSON)],
        "action_invocations": [p.model_dump() for p in model.planned(PLAN_JSON)],
    }
    env.create_run(cv, **{"invoke-action-addrs": ["action.aws_lambda_invoke.ping"], "auto-apply": True})
    assert _finish(env, env.claim(), **reported).status_code == 200
    assert _finish(env, env.claim()).status_code == 200  # applied: the invocations ran
    discarded = env.create_run(cv)
    assert _finish(env, env.claim(), **reported).status_code == 200
    assert env.api("POST", f"/runs/{discarded['id']}/actions/discard").status_code == 202
    return env


def _actions(env: RunEnv, query: str = "") -> dict[str, dict[str, Any]]:
    listed = env.api("GET", f"/workspaces/{env.workspace_id}/terraform-actions{query}")
    assert listed.status_code == 200, listed.text
    return {a["attributes"]["address"]: a for a in listed.json()["data"]}


def test_a_workspace_lists_the_actions_its_configuration_declares(env: RunEnv) -> None:
    actions = _actions(env)
    assert len(actions) == 3
    ping = actions["action.aws_lambda_invoke.ping"]
    assert ping["type"] == "actions" and ping["id"] == model.action_id(env.workspace_id, ping["attributes"]["address"])
    assert ping["attributes"]["module-address"] == model.ROOT_MODULE and ping["attributes"]["provider"] == "aws"
    assert ping["relationships"]["workspace"]["data"]["id"] == env.workspace_id
    assert ping["relationships"]["last-invocation"]["data"]["type"] == "action-invocations"
    assert actions["action.aws_lambda_invoke.each"]["relationships"]["last-invocation"]["data"] is None
    assert set(_actions(env, "?filter[module_address]=module.utils")) == {
        "module.utils.action.ansible_playbook.cleanup"
    }
    assert set(_actions(env, "?filter[provider]=ansible")) == {"module.utils.action.ansible_playbook.cleanup"}
    shown = env.api("GET", f"/terraform-actions/{ping['id']}").json()["data"]
    assert shown["attributes"]["invocation-count"] == 1  # the applied run's; the discarded run's never ran


def test_an_action_s_invocations_aggregated_by_run(env: RunEnv) -> None:
    ping = _actions(env)["action.aws_lambda_invoke.ping"]
    path = f"/terraform-actions/{ping['id']}/invocations/run-summary"
    summaries = env.api("GET", path).json()["data"]
    assert [s["attributes"]["aggregate-invocation-status"] for s in summaries] == ["not_invoked", "successful"]
    applied = summaries[1]
    assert applied["type"] == "action-invocation-run-summary"
    assert applied["id"] == f"{ping['id']}:{applied['relationships']['run']['data']['id']}"
    attributes = applied["attributes"]
    assert attributes["invocation-method"] == "direct" and attributes["planned-invocation-count"] == 1
    assert attributes["invocation-statuses"] == {"successful": 1, "failed": 0}
    assert attributes["invoked-by"]["username"] == "alice" and attributes["invoked-at"]
    filtered = env.api("GET", f"{path}?filter[aggregate_invocation_status]=successful").json()["data"]
    assert [s["id"] for s in filtered] == [applied["id"]]
    assert env.api("GET", f"{path}?filter[invocation_method]=lifecycle").json()["data"] == []
    cleanup = _actions(env)["module.utils.action.ansible_playbook.cleanup"]
    lifecycle = env.api("GET", f"/terraform-actions/{cleanup['id']}/invocations/run-summary").json()["data"]
    assert {s["attributes"]["invocation-method"] for s in lifecycle} == {"lifecycle"}
    assert lifecycle[-1]["attributes"]["planned-invocation-count"] == 2


def test_unknown_or_hidden_actions_are_not_found(env: RunEnv) -> None:
    other = make_run_env()
    assert other.api("GET", f"/workspaces/{other.workspace_id}/terraform-actions").json()["data"] == []
    ping = _actions(env)["action.aws_lambda_invoke.ping"]["id"]
    for action_id in ("nonexisting", "action-x", model.action_id(env.workspace_id, "action.not.declared")):
        assert env.api("GET", f"/terraform-actions/{action_id}").status_code == 404
        assert env.api("GET", f"/terraform-actions/{action_id}/invocations/run-summary").status_code == 404
    bob = env.container.accounts.create_user("bob", "bob@example.com")  # not a member: as absent as an unknown one
    token = env.container.accounts.issue_token(PrincipalKind.USER, bob.id).secret
    headers = {"Authorization": f"Bearer {token}"}
    assert env.client.get(f"/api/v2/terraform-actions/{ping}", headers=headers).status_code == 404
    assert (
        env.client.get(f"/api/v2/terraform-actions/{ping}/invocations/run-summary", headers=headers).status_code == 404
    )
    assert env.api("GET", "/workspaces/ws-nonexisting/terraform-actions").status_code == 404


def test_a_finish_report_s_actions_are_bounded(env: RunEnv) -> None:
    cv = env.upload_config()
    env.create_run(cv, **{"plan-only": True})
    spec = env.claim()
    too_many = [{"address": f"action.t.a{n}"} for n in range(model.MAX_ACTIONS + 1)]
    assert _finish(env, spec, declared_actions=too_many).status_code == 422
    long = [{"address": "action.t." + "a" * model.ADDRESS_MAX}]
    assert _finish(env, spec, action_invocations=long).status_code == 422
    assert _finish(env, spec).status_code == 200


def test_the_runner_reports_what_its_plan_json_says_of_actions(tmp_path: Path) -> None:
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": ""})})
    script = fake_terraform(tmp_path / "bin", version="1.15.9", show_json={"resource_changes": [], **PLAN_JSON})
    spec = make_spec("plan", operation=Operation(invoke_action_addrs=["action.aws_lambda_invoke.ping"]))
    fake.specs[spec.job_id] = spec
    api, transfers = fake.clients()
    report = JobExecutor(runner_config(tmp_path, script), api, transfers, echo_to=io.StringIO()).execute(spec, False)
    assert report.status == "finished", report.error_message
    assert report.declared_actions == model.declared(PLAN_JSON) and len(report.declared_actions) == 3
    assert report.action_invocations == model.planned(PLAN_JSON)
