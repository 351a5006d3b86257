"""Run stages through the TFC API: cost estimates, comments, run events, force-cancel-available-at,
force-execute, include= and the organization's run list."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from run_helpers import RunEnv, make_run_env
from terrace.domain import clock


@pytest.fixture
def env() -> RunEnv:
    return make_run_env()


def aws_plan(*instance_types: str) -> dict[str, Any]:
    return {
        "format_version": "1.0",
        "resource_changes": [
            {
                "address": f"aws_instance.i{n}",
                "mode": "managed",
                "type": "aws_instance",
                "name": f"i{n}",
                "provider_name": "registry.terraform.io/hashicorp/aws",
                "change": {"actions": ["create"], "before": None, "after": {"instance_type": kind}},
            }
            for n, kind in enumerate(instance_types)
        ]
        + [
            {
                "address": "null_resource.n",
                "mode": "managed",
                "type": "null_resource",
                "name": "n",
                "provider_name": "registry.terraform.io/hashicorp/null",
                "change": {"actions": ["create"], "before": None, "after": {}},
            }
        ],
    }


def plan_with_json(env: RunEnv, plan: dict[str, Any], *, has_changes: bool = True) -> dict[str, Any]:
    """Work the next plan job as a runner does: upload its plan JSON, then finish."""
    spec = env.claim()
    key = spec["plan_json_upload_url"].split("memory://blobs/")[1].split("?")[0]
    env.blobs.put(key, json.dumps(plan).encode())
    done = env.runner(
        "POST",
        f"/jobs/{spec['job_id']}/finish",
        json={"runner_id": "r1", "status": "finished", "has_changes": has_changes, "resource_additions": 1},
    )
    assert done.status_code == 200, done.text
    return spec


def test_a_plan_with_changes_is_cost_estimated_before_confirmation(env: RunEnv) -> None:
    run = env.create_run(env.upload_config())
    ce_ref = run["relationships"]["cost-estimate"]["data"]
    assert ce_ref["type"] == "cost-estimates" and ce_ref["id"].startswith("ce-")
    assert env.api("GET", f"/cost-estimates/{ce_ref['id']}").json()["data"]["attributes"]["status"] == "pending"
    plan_with_json(env, aws_plan("t3.micro", "m5.large"))
    attrs = env.run(run["id"])["attributes"]
    assert attrs["status"] == "cost_estimated" and attrs["actions"]["is-confirmable"] is True
    stamps = attrs["status-timestamps"]
    assert {"planned-at", "cost-estimating-at", "cost-estimated-at", "plan-queueable-at"} <= set(stamps)
    ce = env.api("GET", f"/cost-estimates/{ce_ref['id']}").json()["data"]["attributes"]
    monthly = f"{round(0.0104 * 730, 2) + round(0.096 * 730, 2):.2f}"
    assert ce["status"] == "finished" and "finished-at" in ce["status-timestamps"]
    assert (ce["resources-count"], ce["matched-resources-count"], ce["unmatched-resources-count"]) == (3, 2, 1)
    costs = (ce["prior-monthly-cost"], ce["proposed-monthly-cost"], ce["delta-monthly-cost"])
    assert costs == ("0.00", monthly, monthly)
    output = env.api("GET", f"/cost-estimates/{ce_ref['id']}/output").text
    assert "Resources: 2 of 3 estimated" in output
    actions = [e["attributes"]["action"] for e in env.api("GET", f"/runs/{run['id']}/run-events").json()["data"]]
    assert actions[-4:] == ["planning", "planned", "cost_estimating", "cost_estimated"]
    assert env.api("POST", f"/runs/{run['id']}/actions/apply", {}).status_code == 202
    assert env.run(run["id"])["attributes"]["status"] == "apply_queued"


def test_auto_apply_and_no_changes_and_speculative_runs_go_on_after_the_estimate(env: RunEnv) -> None:
    auto = env.create_run(env.upload_config(), **{"auto-apply": True})
    plan_with_json(env, aws_plan("t3.micro"))
    assert env.run(auto["id"])["attributes"]["status"] == "apply_queued"
    env.work_next()
    nothing = env.create_run(env.upload_config())
    plan_with_json(env, {"resource_changes": []}, has_changes=False)
    attrs = env.run(nothing["id"])["attributes"]
    assert attrs["status"] == "planned_and_finished" and attrs["actions"]["is-confirmable"] is False
    speculative = env.create_run(env.upload_config(speculative=True))
    plan_with_json(env, aws_plan("t3.micro"))
    run = env.run(speculative["id"])
    assert run["attributes"]["status"] == "planned_and_finished"
    ce_id = run["relationships"]["cost-estimate"]["data"]["id"]
    assert env.api("GET", f"/cost-estimates/{ce_id}").json()["data"]["attributes"]["status"] == "finished"


def test_a_missing_plan_json_errors_the_estimate_not_the_run(env: RunEnv) -> None:
    run = env.create_run(env.upload_config())
    env.work_next()  # no plan JSON uploaded
    data = env.api("GET", f"/runs/{run['id']}/cost-estimate").json()["data"]
    assert data["attributes"]["status"] == "errored" and "no JSON" in data["attributes"]["error-message"]
    assert env.run(run["id"])["attributes"]["status"] == "cost_estimated"


def test_an_organization_can_turn_cost_estimation_off(env: RunEnv) -> None:
    off = {"data": {"type": "organizations", "attributes": {"cost-estimation-enabled": False}}}
    org = env.api("PATCH", "/organizations/acme", off)
    assert org.status_code == 200 and org.json()["data"]["attributes"]["cost-estimation-enabled"] is False
    bad = {"data": {"type": "organizations", "attributes": {"cost-estimation-enabled": "no"}}}
    assert env.api("PATCH", "/organizations/acme", bad).status_code == 422
    env.container.organizations.forget("acme")
    run = env.create_run(env.upload_config())
    assert run["relationships"]["cost-estimate"]["data"] is None
    plan_with_json(env, aws_plan("t3.micro"))
    assert env.run(run["id"])["attributes"]["status"] == "planned"


def test_a_canceled_run_ends_its_estimate(env: RunEnv) -> None:
    env.create_run(env.upload_config())
    pending = env.create_run(env.upload_config())
    assert env.api("POST", f"/runs/{pending['id']}/actions/cancel", {"comment": "not now"}).status_code == 202
    run = env.run(pending["id"])
    attrs = run["attributes"]
    requested = env.container.run_store.load(pending["id"]).cancel_requested_at
    assert attrs["status"] == "canceled" and attrs["canceled-at"] and requested is not None
    # counted from the cancel request (the cool-off is 0 here): not from `canceled-at`, which comes a moment later
    expected = clock.iso(datetime.fromtimestamp(requested + env.container.settings.force_cancel_cooloff_s, UTC))
    assert attrs["force-cancel-available-at"] == expected
    ce_id = run["relationships"]["cost-estimate"]["data"]["id"]
    assert env.api("GET", f"/cost-estimates/{ce_id}").json()["data"]["attributes"]["status"] == "canceled"
    (comment,) = run["relationships"]["comments"]["data"]
    assert env.api("GET", f"/comments/{comment['id']}").json()["data"]["attributes"]["body"] == "not now"


def test_comments_are_run_events_with_their_actor(env: RunEnv) -> None:
    run = env.create_run(env.upload_config())
    assert env.api("GET", f"/runs/{run['id']}/comments").json()["data"] == []
    body = {"data": {"type": "comments", "attributes": {"body": "looks good"}}}
    created = env.api("POST", f"/runs/{run['id']}/comments", body)
    assert created.status_code == 201 and created.json()["data"]["attributes"]["body"] == "looks good"
    for bad in ({"data": {"type": "comments", "attributes": {"body": " "}}}, {"data": {"type": "comments"}}):
        assert env.api("POST", f"/runs/{run['id']}/comments", bad).status_code == 422
    assert env.api("POST", "/runs/run-nope/comments", body).status_code == 404
    assert [c["attributes"]["body"] for c in env.api("GET", f"/runs/{run['id']}/comments").json()["data"]] == [
        "looks good"
    ]
    events = env.api("GET", f"/runs/{run['id']}/run-events?include=actor,comment").json()
    (commented,) = [e for e in events["data"] if e["attributes"]["action"] == "commented"]
    included = {(i["type"], i["id"]): i for i in events["included"]}
    actor = commented["relationships"]["actor"]["data"]
    assert included[("users", actor["id"])]["attributes"]["username"] == "alice"
    assert "email" not in included[("users", actor["id"])]["attributes"]
    comment = commented["relationships"]["comment"]["data"]
    assert included[("comments", comment["id"])]["attributes"]["body"] == "looks good"
    one = env.api("GET", f"/run-events/{commented['id']}").json()
    assert one["data"]["id"] == commented["id"] and "included" not in one
    assert env.api("GET", "/run-events/re-nothing-here").status_code == 404
    assert env.run(run["id"])["relationships"]["run-events"]["data"]


def test_include_brings_the_related_objects(env: RunEnv) -> None:
    run = env.create_run(env.upload_config())
    includes = "plan,apply,created_by,configuration_version,workspace,task_stages,cost_estimate,bogus"
    document = env.api("GET", f"/runs/{run['id']}?include={includes}").json()
    types = sorted(i["type"] for i in document["included"])
    assert types == ["applies", "configuration-versions", "cost-estimates", "plans", "users", "workspaces"]
    created_by = document["data"]["relationships"]["created-by"]["data"]
    assert created_by["type"] == "users" and created_by["id"].startswith("user-")
    assert "included" not in env.api("GET", f"/runs/{run['id']}?include=").json()
    listed = env.api("GET", f"/workspaces/{env.workspace_id}/runs?include=workspace").json()
    assert [i["type"] for i in listed["included"]] == ["workspaces"]
    assert "data" not in listed["data"][0]["relationships"]["run-events"]  # lists link to a run's events


def test_organization_runs_and_list_filters(env: RunEnv) -> None:
    first = env.create_run(env.upload_config())
    second = env.create_run(env.upload_config())
    found = env.api("GET", "/organizations/acme/runs").json()
    assert [r["id"] for r in found["data"]] == [second["id"], first["id"]]
    assert found["meta"]["pagination"]["total-count"] == 2

    def ids(query: str) -> list[str]:
        return [r["id"] for r in env.api("GET", f"/workspaces/{env.workspace_id}/runs?{query}").json()["data"]]

    assert ids("filter[status]=pending") == [second["id"]]
    assert ids("filter[status_group]=non_final") == [second["id"], first["id"]]
    assert ids("filter[source]=tfe-api") == [second["id"], first["id"]]
    assert ids("filter[operation]=plan_only") == [] and ids("filter[operation]=save_plan") == []
    assert ids("search[user]=alice") == [second["id"], first["id"]] and ids("search[user]=bob") == []
    assert ids("search[commit]=abc") == []
    assert len(env.api("GET", "/organizations/acme/runs?filter[workspace_names]=app").json()["data"]) == 2
    assert env.api("GET", "/organizations/acme/runs?filter[workspace_names]=other").json()["data"] == []
    assert env.api("GET", "/organizations/nope/runs").status_code == 404


def test_force_execute_discards_the_run_awaiting_confirmation(env: RunEnv) -> None:
    first = env.create_run(env.upload_config())
    second = env.create_run(env.upload_config())
    assert env.api("POST", f"/runs/{second['id']}/actions/force-execute", {}).status_code == 409  # first planning
    env.work_next()
    assert env.run(second["id"])["attributes"]["permissions"]["can-force-execute"] is True
    assert env.api("POST", f"/runs/{second['id']}/actions/force-execute", {}).status_code == 202
    assert env.run(first["id"])["attributes"]["status"] == "discarded"
    assert env.run(second["id"])["attributes"]["status"] == "plan_queued"
    assert env.api("POST", f"/runs/{second['id']}/actions/force-execute", {}).status_code == 409


def test_apply_with_a_comment_records_who_confirmed(env: RunEnv) -> None:
    run = env.create_run(env.upload_config())
    env.work_next()
    assert env.run(run["id"])["relationships"]["confirmed-by"]["data"] is None
    too_long = env.api("POST", f"/runs/{run['id']}/actions/apply", {"comment": "x" * 5000})
    assert too_long.status_code == 422 and env.run(run["id"])["attributes"]["status"] == "cost_estimated"  # no apply
    assert env.api("POST", f"/runs/{run['id']}/actions/apply", {"comment": "Hello"}).status_code == 202
    relationships = env.run(run["id"])["relationships"]
    assert relationships["confirmed-by"]["data"]["type"] == "users"
    (comment,) = relationships["comments"]["data"]
    assert env.api("GET", f"/comments/{comment['id']}").json()["data"]["attributes"]["body"] == "Hello"


def test_deleting_a_workspace_ends_its_runs_and_their_lock(env: RunEnv) -> None:
    running = env.create_run(env.upload_config())
    spec = env.claim()  # planning on a runner, holding the workspace lock
    pending = env.create_run(env.upload_config())
    assert env.api("GET", f"/workspaces/{env.workspace_id}").json()["data"]["attributes"]["locked"] is True
    ended: list[str] = []
    original = env.container.runs._end_now
    env.container.runs._end_now = lambda run_id, *a: (ended.append(run_id), original(run_id, *a))[1]  # type: ignore[method-assign]
    assert env.api("DELETE", f"/workspaces/{env.workspace_id}").status_code == 204
    assert sorted(ended) == sorted([running["id"], pending["id"]])  # ended (runner told to stop), then purged
    beat = env.runner("POST", f"/jobs/{spec['job_id']}/heartbeat", json={"runner_id": "r1"})
    assert beat.status_code == 404 or beat.json()["cancel"] is True  # the runner stops
    assert env.container.run_store.open_runs() == []


def test_a_user_lock_refuses_a_safe_delete_and_ends_no_run(env: RunEnv) -> None:
    assert env.api("POST", f"/workspaces/{env.workspace_id}/actions/lock", {}).status_code == 200
    run = env.create_run(env.upload_config())
    assert env.api("POST", f"/workspaces/{env.workspace_id}/actions/safe-delete").status_code == 409
    assert env.run(run["id"])["attributes"]["status"] == "pending"
    assert env.api("DELETE", f"/workspaces/{env.workspace_id}").status_code == 204  # TFC's force delete
