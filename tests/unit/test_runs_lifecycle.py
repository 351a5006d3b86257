"""The run state machine and workspace queue, driven through the TFC API and the runner protocol."""

from __future__ import annotations

import pytest
from run_helpers import RunEnv, make_run_env


@pytest.fixture
def env() -> RunEnv:
    return make_run_env()


def test_plan_then_confirm_then_apply(env: RunEnv) -> None:
    run = env.create_run(env.upload_config())
    assert run["attributes"]["status"] == "plan_queued"
    assert run["attributes"]["actions"]["is-confirmable"] is False
    spec = env.work_next()
    assert spec["phase"] == "plan" and spec["workspace_name"] == "app" and spec["run_token"]
    planned = env.run(run["id"])
    assert planned["attributes"]["status"] == "cost_estimated"
    assert planned["attributes"]["has-changes"] is True
    assert planned["attributes"]["actions"]["is-confirmable"] is True
    assert env.api("POST", f"/runs/{run['id']}/actions/apply", {}).status_code == 202
    assert env.run(run["id"])["attributes"]["status"] == "apply_queued"
    (queued,) = env.queued()
    assert queued.lane == "apply" and queued.phase == "apply"
    env.work_next()
    done = env.run(run["id"])["attributes"]
    assert done["status"] == "applied"
    ws = env.api("GET", f"/workspaces/{env.workspace_id}").json()["data"]
    assert ws["attributes"]["locked"] is False


def test_no_changes_finishes_and_releases(env: RunEnv) -> None:
    run = env.create_run(env.upload_config())
    env.work_next(has_changes=False)
    assert env.run(run["id"])["attributes"]["status"] == "planned_and_finished"
    assert env.api("POST", f"/runs/{run['id']}/actions/apply", {}).status_code == 409


def test_auto_apply_queues_the_apply(env: RunEnv) -> None:
    run = env.create_run(env.upload_config(), **{"auto-apply": True})
    env.work_next()
    assert env.run(run["id"])["attributes"]["status"] == "apply_queued"


def test_runs_of_a_workspace_run_in_order_and_hold_the_lock(env: RunEnv) -> None:
    first = env.create_run(env.upload_config())
    second = env.create_run(env.upload_config())
    assert env.run(second["id"])["attributes"]["status"] == "pending"
    assert env.run(second["id"])["attributes"]["position-in-queue"] == 1
    ws = env.api("GET", f"/workspaces/{env.workspace_id}").json()["data"]
    assert ws["attributes"]["locked"] is True
    assert ws["relationships"]["locked-by"]["data"] == {"type": "runs", "id": first["id"]}
    env.work_next()
    assert env.api("POST", f"/runs/{first['id']}/actions/discard", {}).status_code == 202
    assert env.run(first["id"])["attributes"]["status"] == "discarded"
    assert env.run(second["id"])["attributes"]["status"] == "plan_queued"


def test_speculative_run_does_not_wait_behind_a_queued_apply(env: RunEnv) -> None:
    blocking = env.create_run(env.upload_config())
    speculative = env.create_run(env.upload_config(speculative=True))
    assert speculative["attributes"]["plan-only"] is True
    assert env.run(speculative["id"])["attributes"]["status"] == "plan_queued"
    lanes = [q.lane for q in env.queued()]
    assert lanes == ["plan", "speculative"]
    assert env.run(blocking["id"])["attributes"]["status"] == "plan_queued"


def test_user_lock_makes_the_head_wait_until_unlock(env: RunEnv) -> None:
    assert env.api("POST", f"/workspaces/{env.workspace_id}/actions/lock", {}).status_code == 200
    run = env.create_run(env.upload_config())
    assert env.run(run["id"])["attributes"]["status"] == "pending"
    assert env.queued() == []
    assert env.api("POST", f"/workspaces/{env.workspace_id}/actions/unlock", {}).status_code == 200
    assert env.run(run["id"])["attributes"]["status"] == "plan_queued"


def test_cancel_of_a_queued_run_is_immediate_and_promotes_next(env: RunEnv) -> None:
    first = env.create_run(env.upload_config())
    second = env.create_run(env.upload_config())
    assert env.api("POST", f"/runs/{first['id']}/actions/cancel", {}).status_code == 202
    assert env.run(first["id"])["attributes"]["status"] == "canceled"
    assert env.run(second["id"])["attributes"]["status"] == "plan_queued"


def test_cancel_of_a_running_plan_reaches_the_runner(env: RunEnv) -> None:
    run = env.create_run(env.upload_config())
    message = env.claim("r1")
    assert env.runner("POST", f"/jobs/{message['job_id']}/heartbeat", json={"runner_id": "r1"}).json() == {
        "cancel": False,
        "force_cancel": False,
    }
    assert env.api("POST", f"/runs/{run['id']}/actions/cancel", {}).status_code == 202
    attrs = env.run(run["id"])["attributes"]
    assert attrs["status"] == "planning" and attrs["actions"]["is-force-cancelable"] is True
    beat = env.runner("POST", f"/jobs/{message['job_id']}/heartbeat", json={"runner_id": "r1"}).json()
    assert beat["cancel"] is True
    env.runner("POST", f"/jobs/{message['job_id']}/finish", json={"runner_id": "r1", "status": "canceled"})
    assert env.run(run["id"])["attributes"]["status"] == "canceled"


def test_force_cancel_ends_the_run_and_tells_the_runner_to_kill(env: RunEnv) -> None:
    run = env.create_run(env.upload_config())
    message = env.claim("r1")
    assert env.api("POST", f"/runs/{run['id']}/actions/force-cancel", {}).status_code == 409
    env.api("POST", f"/runs/{run['id']}/actions/cancel", {})
    assert env.api("POST", f"/runs/{run['id']}/actions/force-cancel", {}).status_code == 202
    assert env.run(run["id"])["attributes"]["status"] == "force_canceled"
    beat = env.runner("POST", f"/jobs/{message['job_id']}/heartbeat", json={"runner_id": "r1"}).json()
    assert beat == {"cancel": True, "force_cancel": True}
    assert env.api("GET", f"/workspaces/{env.workspace_id}").json()["data"]["attributes"]["locked"] is False


def test_failed_plan_errors_the_run_with_its_log(env: RunEnv) -> None:
    run = env.create_run(env.upload_config())
    env.work_next(status="errored", log=b"Error: boom\n")
    attrs = env.run(run["id"])["attributes"]
    assert attrs["status"] == "errored"
    plan = env.api("GET", f"/plans/{run['relationships']['plan']['data']['id']}").json()["data"]["attributes"]
    assert plan["status"] == "errored"
    url = plan["log-read-url"]
    path = url.split("://", 1)[1].split("/", 1)[1]
    log = env.client.get(f"/{path}?limit=1000&offset=0")
    assert log.status_code == 200 and log.content == b"\x02Error: boom\n\x03"


def test_log_read_url_slices_exactly_and_needs_its_signature(env: RunEnv) -> None:
    run = env.create_run(env.upload_config())
    env.work_next(log=b"0123456789")
    plan = env.api("GET", f"/plans/{run['relationships']['plan']['data']['id']}").json()["data"]["attributes"]
    path = "/" + plan["log-read-url"].split("://", 1)[1].split("/", 1)[1]
    assert env.client.get(f"{path}?limit=4&offset=3").content == b"2345"
    assert env.client.get(f"{path}?limit=100&offset=12").content == b""
    tampered = path[:-1] + ("1" if path[-1] == "0" else "0")  # always a different last character
    assert env.client.get(tampered + "?limit=4&offset=0").status_code == 404


def test_claim_twice_or_stale_attempt_is_refused(env: RunEnv) -> None:
    env.create_run(env.upload_config())
    message = env.claim("r1")
    assert env.runner("POST", "/jobs/next", json={"runner_id": "r2"}).status_code == 204  # handed out once
    assert env.client.post("/api/runner/jobs/next", json={"runner_id": "x"}).status_code == 401
    assert env.runner("POST", f"/jobs/{message['job_id']}/heartbeat", json={"runner_id": "r2"}).status_code == 409


def test_bad_run_requests(env: RunEnv) -> None:
    assert env.api("POST", "/runs", {"data": {"type": "runs"}}).status_code == 422
    assert (
        env.api(
            "POST",
            "/runs",
            {
                "data": {
                    "type": "runs",
                    "relationships": {"workspace": {"data": {"type": "workspaces", "id": "ws-doesnotexist1234"}}},
                }
            },
        ).status_code
        == 404
    )
    cv = env.upload_config()
    bad = {
        "data": {
            "type": "runs",
            "attributes": {"target-addrs": "x"},
            "relationships": {
                "workspace": {"data": {"type": "workspaces", "id": env.workspace_id}},
                "configuration-version": {"data": {"type": "configuration-versions", "id": cv}},
            },
        }
    }
    assert env.api("POST", "/runs", bad).status_code == 422
    assert env.api("GET", "/runs/run-doesnotexist1234").status_code == 404
    assert env.api("GET", f"/workspaces/{env.workspace_id}/runs").json()["data"] == []


def test_a_run_behind_a_user_lock_is_the_current_run(env: RunEnv) -> None:
    assert env.api("POST", f"/workspaces/{env.workspace_id}/actions/lock", {}).status_code == 200
    run = env.create_run(env.upload_config())
    ws = env.api("GET", f"/workspaces/{env.workspace_id}").json()["data"]
    assert ws["relationships"]["current-run"]["data"] == {"type": "runs", "id": run["id"]}
    second = env.create_run(env.upload_config())
    ws = env.api("GET", f"/workspaces/{env.workspace_id}").json()["data"]
    assert ws["relationships"]["current-run"]["data"]["id"] == run["id"]
    env.api("POST", f"/workspaces/{env.workspace_id}/actions/unlock", {})
    assert env.run(run["id"])["attributes"]["status"] == "plan_queued"
    assert env.run(second["id"])["attributes"]["status"] == "pending"


def test_plan_json_and_its_redacted_form(env: RunEnv) -> None:
    import json

    run = env.create_run(env.upload_config())
    spec = env.claim("r1")
    plan = {
        "resource_changes": [
            {
                "address": "x.a",
                "change": {
                    "before": None,
                    "after": {"password": "hunter2", "name": "a"},
                    "before_sensitive": False,
                    "after_sensitive": {"password": True},
                },
            }
        ],
        "output_changes": {"secret": {"before": None, "after": "s3cr3t", "after_sensitive": True}},
    }
    key = spec["plan_json_upload_url"].split("memory://blobs/")[1].split("?")[0]
    env.blobs.put(key, json.dumps(plan).encode())
    plan_id = run["relationships"]["plan"]["data"]["id"]
    assert env.api("GET", f"/plans/{plan_id}/json-output").status_code == 404  # not finished yet
    env.runner(
        "POST", f"/jobs/{spec['job_id']}/finish", json={"runner_id": "r1", "status": "finished", "has_changes": True}
    )
    full = env.api("GET", f"/plans/{plan_id}/json-output", follow_redirects=False)
    assert full.status_code == 307 and full.headers["location"].startswith(f"memory://blobs/{key}")
    redacted = env.api("GET", f"/plans/{plan_id}/json-output-redacted").json()
    change = redacted["resource_changes"][0]["change"]["after"]
    assert change == {"password": None, "name": "a"}
    assert redacted["output_changes"]["secret"]["after"] is None


def test_positions_in_the_organization_queue(env: RunEnv) -> None:
    other = env.api(
        "POST", "/organizations/acme/workspaces", {"data": {"type": "workspaces", "attributes": {"name": "b"}}}
    ).json()["data"]["id"]
    first = env.create_run(env.upload_config())
    second = env.create_run(env.upload_config(workspace_id=other), workspace_id=other)
    third = env.create_run(env.upload_config())
    queue = env.api("GET", "/organizations/acme/runs/queue").json()["data"]
    assert [(r["id"], r["attributes"]["position-in-queue"]) for r in queue] == [(first["id"], 1), (second["id"], 2)]
    runs = env.api("GET", f"/workspaces/{env.workspace_id}/runs").json()["data"]
    assert {r["id"]: r["attributes"]["position-in-queue"] for r in runs} == {first["id"]: 1, third["id"]: 1}
