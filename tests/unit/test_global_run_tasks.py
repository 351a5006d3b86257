"""Entitlements and global run tasks (go-tfe v1.109's TestOrganizationsReadEntitlements, TestRunTasksCreate,
TestRunTasksCreateWithoutGlobalEntitlement): the entitlement set says what Terrace has, less what the organization's
feature set withholds; a run task made global applies to every workspace of its organization at its stages, with
its enforcement level, while the organization is entitled to global run tasks; without the entitlement its
`global-configuration` is ignored (as HCP ignores it) and no run gets it."""

from __future__ import annotations

from typing import Any

import pytest
from policy_helpers import call
from run_helpers import RunEnv, make_run_env
from terrace.domain.principal import PrincipalKind
from test_run_tasks import callback, create_task, deliver, sent_payload, status

GLOBAL = {"enabled": True, "stages": ["pre_plan"], "enforcement-level": "mandatory"}


@pytest.fixture
def env() -> RunEnv:
    return make_run_env()


def _admin(env: RunEnv) -> str:
    admin = env.container.accounts.create_user("root", "root@example.com", site_admin=True)
    return str(env.container.accounts.issue_token(PrincipalKind.USER, admin.id).secret)


def _put_on(env: RunEnv, token: str, plan: str) -> Any:
    (feature_set,) = call(env, token, "GET", f"/admin/feature-sets?q={plan}").json()["data"]
    body = {"data": {"type": "subscription", "relationships": {"feature-set": {"data": feature_set}}}}
    return call(env, token, "POST", f"/admin/organizations/{env.organization}/subscription", body)


def _entitlements(env: RunEnv) -> dict[str, Any]:
    return dict(env.api("GET", f"/organizations/{env.organization}/entitlement-set").json()["data"]["attributes"])


def test_entitlements_say_what_terrace_has_less_what_the_feature_set_withholds(env: RunEnv) -> None:
    has = _entitlements(env)
    for feature in ("private-module-registry", "audit-logging", "global-run-tasks", "run-tasks", "agents", "sso"):
        assert has[feature] is True, feature
    for feature in ("sentinel", "private-run-tasks", "waypoint-actions", "infragraph"):
        assert has[feature] is False, feature
    permissions = env.api("GET", f"/organizations/{env.organization}").json()["data"]["attributes"]["permissions"]
    assert permissions["can-manage-no-code-modules"] is True and permissions["can-deploy-no-code-modules"] is True
    admin = _admin(env)
    assert call(env, admin, "GET", "/admin/feature-sets?q=nosuch").json()["data"] == []
    assert _put_on(env, admin, "Free").status_code == 201
    assert _entitlements(env) == {**has, "global-run-tasks": False}
    assert _put_on(env, admin, "Business").status_code == 201
    assert _entitlements(env) == has
    unknown = {"data": {"type": "subscription", "relationships": {"feature-set": {"data": {"id": "fs-gold"}}}}}
    refused = call(env, admin, "POST", f"/admin/organizations/{env.organization}/subscription", unknown)
    assert refused.status_code == 422 and refused.json()["errors"][0]["source"]["pointer"].endswith("feature-set")


def test_a_global_task_applies_to_every_workspace_at_its_stages(env: RunEnv) -> None:
    task = create_task(env, **{"global-configuration": GLOBAL})
    assert task["attributes"]["global-configuration"] == GLOBAL
    run = env.create_run(env.upload_config())  # the workspace attaches nothing
    assert status(env, run) == "pre_plan_running"
    deliver(env)
    payload, _, _ = sent_payload(env)
    assert payload["stage"] == "pre_plan" and payload["task_result_enforcement_level"] == "mandatory"
    result = env.api("GET", f"/task-results/{payload['task_result_id']}").json()["data"]["attributes"]
    assert result["task-id"] == task["id"] and result["workspace-task-id"] == ""
    assert callback(env, payload, "failed").status_code == 200
    deliver(env)
    assert status(env, run) == "errored"  # mandatory

    off = {"data": {"type": "tasks", "attributes": {"global-configuration": {"enabled": False}}}}
    changed = env.api("PATCH", f"/tasks/{task['id']}", off).json()["data"]["attributes"]["global-configuration"]
    assert changed == {**GLOBAL, "enabled": False}  # the other keys kept
    assert status(env, env.create_run(env.upload_config())) != "pre_plan_running"


def test_without_the_entitlement_global_configuration_is_ignored_and_applies_to_no_run(env: RunEnv) -> None:
    global_task = create_task(env, name="everywhere", **{"global-configuration": GLOBAL})
    assert _put_on(env, _admin(env), "Free").status_code == 201
    assert status(env, env.create_run(env.upload_config())) != "pre_plan_running"  # its global task no longer applies
    ignored = create_task(env, **{"global-configuration": GLOBAL})
    assert ignored["attributes"]["global-configuration"] is None
    assert env.api("GET", f"/tasks/{global_task['id']}").status_code == 200


def test_a_bad_global_configuration_is_a_422(env: RunEnv) -> None:
    for bad in ({"enabled": "yes"}, {"stages": ["later"]}, {"enforcement-level": "strict"}, ["pre_plan"]):
        body = {"data": {"type": "tasks", "attributes": {"name": "x", "url": "https://checks.example.com/hook",
                                                          "global-configuration": bad}}}  # fmt: skip
        answer = env.api("POST", f"/organizations/{env.organization}/tasks", body)
        assert answer.status_code == 422, (bad, answer.text)
        assert "global-configuration" in answer.json()["errors"][0]["source"]["pointer"]
