"""Health assessments: the schedule (spread, due, skipped while a run holds the workspace), the assessment run
(plan-only, refresh-only, lowest lane, not among the workspace's runs), its result read from the JSON plan as
HCP's Assessment Results API shapes it, and the `assessment:*` notification triggers."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from run_helpers import RunEnv, join, make_run_env
from table_items import memory_items
from terrace.domain import assessments as model
from terrace.domain.principal import PrincipalKind
from terrace.domain.runs import run_id_of
from terrace.services import shared_keys
from terrace.web.app import create_app
from ui_helpers import sign_in

INTERVAL = 3600
DRIFTED_PLAN = {
    "resource_drift": [
        {"address": "null_resource.a", "mode": "managed", "change": {"actions": ["delete"]}},
        {"address": "null_resource.b", "mode": "managed", "change": {"actions": ["no-op"]}},
    ],
    "checks": [{"status": "fail"}, {"status": "pass"}, {"status": "unknown"}],
    "prior_state": {"values": {"root_module": {
        "resources": [{"mode": "managed"}, {"mode": "managed"}, {"mode": "data"}],
        "child_modules": [{"resources": [{"mode": "managed"}]}]}}},
}  # fmt: skip


# the schedule ----------------------------------------------------------------------------------------------
def test_each_workspace_has_its_own_slot_and_they_are_spread():
    offsets = [model.offset(f"ws-{n:04d}", INTERVAL) for n in range(400)]
    assert offsets == [model.offset(f"ws-{n:04d}", INTERVAL) for n in range(400)]  # stable
    assert all(0 <= o < INTERVAL for o in offsets)
    quarters = [sum(1 for o in offsets if q * INTERVAL / 4 <= o < (q + 1) * INTERVAL / 4) for q in range(4)]
    assert min(quarters) > 60, quarters  # not all at once: every quarter of the interval gets its share


def test_due_times_follow_the_workspace_grid():
    now = 1_000_000.0
    due = model.first_due("ws-a", now, INTERVAL)
    assert now < due <= now + INTERVAL and (due - model.offset("ws-a", INTERVAL)) % INTERVAL == 0
    assert model.due_at(shared_keys.schedule_item("ws-a", "org", enabled_at=now), INTERVAL) == due
    after = model.next_due("ws-a", due, INTERVAL)
    assert INTERVAL / 2 <= after - due <= 1.5 * INTERVAL


def test_the_plan_is_read_for_drift_and_checks():
    assert model.drift_counts(DRIFTED_PLAN) == (1, 2)
    assert model.check_counts(DRIFTED_PLAN) == {"pass": 1, "fail": 1, "error": 0, "unknown": 1}
    assert model.drift_counts({}) == (0, 0)


# through the API and the runner protocol -----------------------------------------------------------------
@pytest.fixture
def env() -> RunEnv:
    env = make_run_env(assessment_interval_s=INTERVAL)
    cv = env.upload_config()
    env.create_run(cv, **{"auto-apply": True})
    env.work_next()  # plan
    env.work_next()  # apply
    env.container.workspaces.mutate(
        env.workspace_id, lambda ws: dataclasses.replace(ws, current_state_version_id="sv-1")
    )
    _drain(env)
    return env


def _drain(env: RunEnv) -> list[dict[str, Any]]:
    published, handled = env.container.publisher.events, []  # type: ignore[attr-defined]
    while published:
        event = published.pop(0)
        env.container.events.handle(event)
        handled.append(event)
    return handled


def _enable(env: RunEnv, value: Any = True) -> Any:
    body = {"data": {"type": "workspaces", "attributes": {"assessments-enabled": value}}}
    return env.api("PATCH", f"/workspaces/{env.workspace_id}", body)


def _sweep(env: RunEnv, times: int = 1) -> dict[str, int] | None:
    return env.container.assessments.sweep_if_due(now=1e12 * times)


def test_the_attribute_fills_and_empties_the_schedule(env):
    table = env.container.table
    assert env.container.assessments.sweep_if_due() is None  # nothing enabled: one empty query, nothing else
    assert _enable(env, "yes").status_code == 422
    assert _enable(env).json()["data"]["attributes"]["assessments-enabled"] is True
    assert table.get(*shared_keys.schedule_key(env.workspace_id)) is not None
    assert _enable(env, False).status_code == 200
    assert table.query(shared_keys.SCHEDULE_PK) == []


def test_an_assessment_is_a_refresh_only_plan_in_the_lowest_lane_reported_as_hcp_does(env):
    _enable(env)
    hook = {"data": {"type": "notification-configurations", "attributes": {
        "destination-type": "generic", "enabled": True, "name": "health", "url": "https://hooks.example.com/t",
        "triggers": ["assessment:drifted", "assessment:failed", "run:completed"]}}}  # fmt: skip
    made = env.api("POST", f"/workspaces/{env.workspace_id}/notification-configurations", hook)
    assert made.status_code == 201, made.text
    assert _sweep(env) == {"started": 1, "skipped": 0}
    (job,) = env.queued()
    assert job.lane == "speculative"
    assert _sweep(env, 2) == {"started": 0, "skipped": 1}  # the first one has not ended: none piles up
    spec = env.claim()
    assert spec["operation"]["refresh_only"] and spec["operation"]["speculative"]
    run = env.container.run_store.load(run_id_of(spec["job_id"]))
    env.blobs.put(run.plan.json_key, json.dumps(DRIFTED_PLAN).encode())
    done = env.runner("POST", f"/jobs/{spec['job_id']}/finish", json={"runner_id": "r1", "status": "finished",
                                                                       "has_changes": True})  # fmt: skip
    assert done.status_code == 200, done.text
    handled = _drain(env)

    completed = [e for e in handled if e["type"] == "assessment.completed"]
    assert completed and completed[0]["triggers"] == ["assessment:drifted", "assessment:check_failure"]
    sent = [json.loads(e["body"])["notifications"][0] for e in handled if e["type"] == "notification.delivery"]
    assert [(n["trigger"], n["message"]) for n in sent] == [("assessment:drifted", "Drift Detected")]  # no run:*
    current = env.api("GET", f"/workspaces/{env.workspace_id}/current-assessment-result")
    assert current.status_code == 200, current.text
    data = current.json()["data"]
    assert data["type"] == "assessment-results" and data["id"].startswith("asmtres-")
    assert data["attributes"] | {"created-at": None} == {
        "drifted": True, "succeeded": True, "error-msg": None, "created-at": None, "all-checks-succeeded": False,
        "checks-passed": 1, "checks-failed": 1, "checks-errored": 0, "checks-unknown": 1,
        "resources-drifted": 1, "resources-undrifted": 2}  # fmt: skip
    assert env.api("GET", f"/assessment-results/{data['id']}").json()["data"] == data
    out = env.api("GET", data["links"]["json-output"].removeprefix("/api/v2"), follow_redirects=False)
    assert out.status_code == 307
    listed = env.api("GET", f"/workspaces/{env.workspace_id}/runs").json()["data"]
    assert run.id not in [r["id"] for r in listed]  # an assessment is not one of the workspace's runs
    token = env.headers["Authorization"].removeprefix("Bearer ")
    browser = TestClient(create_app(env.container), base_url="https://testserver", follow_redirects=False)
    assert sign_in(browser, token).status_code == 303
    html = browser.get("/app/acme/workspaces").text  # the list (the workspace's page includes the same badges)
    assert ">Drifted</span>" in html and ">Checks failing</span>" in html
    # the explorer's workspace row carries the same result, and its drift and check filters find the workspace
    query = "type=workspaces&filter[0][drifted][is][0]=true&filter[1][checks_failed][gt][0]=0"
    (row,) = env.api("GET", f"/organizations/acme/explorer?{query}").json()["data"]
    assert row["id"] == env.workspace_id and {k: row["attributes"][k] for k in (
        "drifted", "resources-drifted", "resources-undrifted", "all-checks-succeeded", "checks-passed",
        "checks-failed", "checks-errored", "checks-unknown")} == {
        "drifted": True, "resources-drifted": 1, "resources-undrifted": 2, "all-checks-succeeded": False,
        "checks-passed": 1, "checks-failed": 1, "checks-errored": 0, "checks-unknown": 1}  # fmt: skip
    assert env.api("GET", "/organizations/acme/explorer?type=workspaces&filter[0][drifted][is][0]=false").json()[
        "data"] == []  # fmt: skip


def test_a_failed_assessment_is_reported_with_its_error(env):
    _enable(env)
    _sweep(env)
    spec = env.claim()
    env.runner("POST", f"/jobs/{spec['job_id']}/finish", json={"runner_id": "r1", "status": "errored",
                                                               "error_message": "refresh failed"})  # fmt: skip
    handled = _drain(env)
    assert [e["triggers"] for e in handled if e["type"] == "assessment.completed"] == [["assessment:failed"]]
    attributes = env.api("GET", f"/workspaces/{env.workspace_id}/current-assessment-result").json()["data"][
        "attributes"
    ]
    assert attributes["succeeded"] is False and "refresh failed" in attributes["error-msg"]


def test_no_assessment_starts_or_runs_while_a_run_holds_the_workspace(env):
    _enable(env)
    held = env.create_run(env.upload_config())  # awaits confirmation after its plan: it holds the workspace
    env.work_next()
    assert env.run(held["id"])["attributes"]["actions"]["is-confirmable"] is True
    assert _sweep(env) == {"started": 0, "skipped": 1}
    assert env.queued() == []
    # an assessment queued while the workspace was free, claimed once a run holds it again: it ends unrun
    lock = env.container.workspaces.load(env.workspace_id).lock
    env.container.workspaces.mutate(env.workspace_id, lambda ws: dataclasses.replace(ws, lock=None))
    assert _sweep(env, 2) == {"started": 1, "skipped": 0}
    env.container.workspaces.mutate(env.workspace_id, lambda ws: dataclasses.replace(ws, lock=lock))
    assert env.runner("POST", "/jobs/next", json={"runner_id": "r1"}).status_code == 204
    (assessment,) = env.container.table.query(f"{env.workspace_id}#assessments", index="gsi1")
    assert assessment["status"] == "canceled" and assessment["plan"]["runner_id"] is None
    assert not [e for e in _drain(env) if e["type"] == "assessment.completed"]  # a skip is no result


def test_results_of_a_hidden_workspace_are_not_found_alike(env):
    absent = env.api("GET", "/assessment-results/asmtres-nothere")
    assert absent.status_code == 404
    assert env.api("GET", f"/workspaces/{env.workspace_id}/current-assessment-result").status_code == 404


def test_an_organization_enforcing_assessments_assesses_every_workspace(env):
    body = {"data": {"type": "organizations", "attributes": {"assessments-enforced": True}}}
    answer = env.api("PATCH", "/organizations/acme", body)
    assert answer.status_code == 200, answer.text
    assert answer.json()["data"]["attributes"]["assessments-enforced"] is True
    assert (
        env.api("PATCH", "/organizations/acme", {"data": {"attributes": {"assessments-enforced": 1}}}).status_code
        == 422
    )
    _sweep(env)  # the organization's entry gives each workspace one of its own
    assert _sweep(env, 2) == {"started": 1, "skipped": 0}
    off = {"data": {"type": "organizations", "attributes": {"assessments-enforced": False}}}
    assert env.api("PATCH", "/organizations/acme", off).status_code == 200
    assert _sweep(env, 3) == {"started": 0, "skipped": 0, "removed": 1}  # its workspace's entry goes
    assert env.container.table.query(shared_keys.SCHEDULE_PK) == []


def _custom_member(env: RunEnv, name: str, **access: str) -> dict[str, str]:
    """A member whose one team has `custom` access to the workspace (`access`: runs, state-versions, ...)."""
    team = env.api("POST", "/organizations/acme/teams", {"data": {"type": "teams", "attributes": {"name": name}}})
    team_id = team.json()["data"]["id"]
    rel = {"team": {"data": {"type": "teams", "id": team_id}},
           "workspace": {"data": {"type": "workspaces", "id": env.workspace_id}}}  # fmt: skip
    grant = {"data": {"type": "team-workspaces", "attributes": {"access": "custom", **access}, "relationships": rel}}
    assert env.api("POST", "/team-workspaces", grant).status_code == 201
    user = env.container.accounts.create_user(name, f"{name}@example.com")
    secret = env.container.accounts.issue_token(PrincipalKind.USER, user.id).secret
    join(env, secret, name)
    added = env.api("POST", f"/teams/{team_id}/relationships/users", {"data": [{"type": "users", "id": name}]})
    assert added.status_code == 204, added.text
    return {"Authorization": f"Bearer {secret}"}


def test_the_json_output_needs_what_a_plans_json_needs_not_read_runs_alone(env):
    """The assessment's JSON plan holds the prior state and the variables' values: `runs: read` reads the result,
    its JSON needs read runs and read state, as `/plans/:id/json-output` does."""
    _enable(env)
    _sweep(env)
    spec = env.claim()
    run = env.container.run_store.load(run_id_of(spec["job_id"]))
    env.blobs.put(run.plan.json_key, json.dumps(DRIFTED_PLAN).encode())
    finish = {"runner_id": "r1", "status": "finished", "has_changes": True}
    assert env.runner("POST", f"/jobs/{spec['job_id']}/finish", json=finish).status_code == 200
    _drain(env)
    result_id = env.api("GET", f"/workspaces/{env.workspace_id}/current-assessment-result").json()["data"]["id"]
    runs_only = _custom_member(env, "rita", **{"runs": "read", "state-versions": "none", "variables": "none"})
    state_too = _custom_member(env, "sam", **{"runs": "read", "state-versions": "read", "variables": "none"})
    for headers, reads_json in ((runs_only, False), (state_too, True)):
        read = env.client.get(f"/api/v2/assessment-results/{result_id}", headers=headers)
        assert read.status_code == 200, read.text  # the result itself: read runs
        out = env.client.get(f"/api/v2/assessment-results/{result_id}/json-output", headers=headers,
                             follow_redirects=False)  # fmt: skip
        plan_json = env.client.get(f"/api/v2/plans/{run.plan.id}/json-output", headers=headers, follow_redirects=False)
        assert (out.status_code == 307) is reads_json and (plan_json.status_code == 307) is reads_json, out.text
        if not reads_json:
            assert out.status_code == 403 and "location" not in out.headers and run.plan.json_key not in out.text


def test_deleting_a_workspace_deletes_its_assessment_runs(env):
    _enable(env)
    assert _sweep(env) == {"started": 1, "skipped": 0}
    (job,) = env.queued()
    run_id = run_id_of(job.job_id)
    assert env.container.run_store.latest_assessment(env.workspace_id) is not None
    env.claim()
    assert env.api("DELETE", f"/workspaces/{env.workspace_id}").status_code in (200, 204)
    assert env.container.run_store.latest_assessment(env.workspace_id) is None
    assert run_id not in json.dumps([dict(item) for item in memory_items(env.container.table).values()])
