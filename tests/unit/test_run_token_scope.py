"""A run token acts only on its own workspace, and only while its phase runs."""

from __future__ import annotations

from typing import Any

from run_helpers import RunEnv, make_run_env


def _claim(env: RunEnv, runner_id: str = "r1") -> dict[str, Any]:
    return env.claim(runner_id)


def _as(env: RunEnv, token: str, path: str) -> int:
    headers = {"Authorization": f"Bearer {token}"}
    return int(env.client.get(f"/api/v2{path}", headers=headers).status_code)


def _other_workspace(env: RunEnv, name: str, *, shared_state: bool = False) -> str:
    body = {
        "data": {
            "type": "workspaces",
            "attributes": {"name": name, "execution-mode": "remote", "global-remote-state": shared_state},
        }
    }
    response = env.api("POST", "/organizations/acme/workspaces", body)
    assert response.status_code == 201, response.text
    return str(response.json()["data"]["id"])


def test_run_token_cannot_read_other_workspaces_runs_phases_configs_or_variables() -> None:
    env = make_run_env()
    other = _other_workspace(env, "other")
    other_cv = env.upload_config(workspace_id=other)
    other_run = env.create_run(other_cv, workspace_id=other)
    env.work_next()  # the other workspace's plan runs; its run is now planned
    var = {"data": {"type": "vars", "attributes": {"key": "k", "value": "v", "category": "terraform"}}}
    assert env.api("POST", f"/workspaces/{other}/vars", var).status_code == 201
    env.create_run(env.upload_config())
    token = _claim(env)["run_token"]
    plan_id = other_run["relationships"]["plan"]["data"]["id"]
    for path in (
        f"/runs/{other_run['id']}",
        f"/workspaces/{other}/runs",
        f"/plans/{plan_id}",
        f"/runs/{other_run['id']}/plan",
        f"/configuration-versions/{other_cv}",
        f"/workspaces/{other}/configuration-versions",
        f"/workspaces/{other}/vars",
        f"/workspaces/{other}",
        f"/workspaces/{other}/current-state-version",
    ):
        assert _as(env, token, path) in (403, 404), path
    # its own workspace stays usable while the phase runs
    assert _as(env, token, f"/workspaces/{env.workspace_id}") == 200
    assert _as(env, token, f"/workspaces/{env.workspace_id}/vars") == 200


def test_run_token_reads_only_shared_state_of_other_workspaces() -> None:
    env = make_run_env()
    shared = _other_workspace(env, "shared", shared_state=True)
    shared_cv = env.upload_config(workspace_id=shared)
    shared_run = env.create_run(shared_cv, workspace_id=shared)
    env.work_next()
    env.create_run(env.upload_config())
    token = _claim(env)["run_token"]
    assert _as(env, token, "/organizations/acme/workspaces/shared") == 200  # terraform_remote_state's lookup
    assert _as(env, token, f"/workspaces/{shared}/current-state-version") in (200, 404)  # none yet: 404
    assert _as(env, token, f"/runs/{shared_run['id']}") == 404
    assert _as(env, token, f"/workspaces/{shared}/vars") == 404
    assert _as(env, token, f"/configuration-versions/{shared_cv}") == 404


def test_run_token_dies_when_its_phase_finishes() -> None:
    env = make_run_env()
    run = env.create_run(env.upload_config())
    spec = _claim(env)
    token = spec["run_token"]
    assert _as(env, token, f"/workspaces/{env.workspace_id}") == 200
    finish = {"runner_id": "r1", "status": "finished", "has_changes": True}
    done = env.runner("POST", f"/jobs/{spec['job_id']}/finish", json=finish)
    assert done.status_code == 200, done.text
    assert env.run(run["id"])["attributes"]["status"] == "cost_estimated"  # the run goes on, the plan's token does not
    assert _as(env, token, f"/workspaces/{env.workspace_id}") == 401


def test_run_token_dies_when_its_attempt_is_retried() -> None:
    env = make_run_env(job_heartbeat_timeout_s=0, job_retry_base_s=0)
    run = env.create_run(env.upload_config())
    first = _claim(env)
    assert _as(env, first["run_token"], f"/workspaces/{env.workspace_id}") == 200
    assert env.container.reaper.reap_once()["retried"] == 1
    assert env.run(run["id"])["attributes"]["status"] == "plan_queued"
    assert _as(env, first["run_token"], f"/workspaces/{env.workspace_id}") == 401
    second = _claim(env, runner_id="r2")
    assert second["run_token"] != first["run_token"]
    assert _as(env, second["run_token"], f"/workspaces/{env.workspace_id}") == 200


def test_run_token_dies_on_force_cancel_and_when_the_phase_errors() -> None:
    env = make_run_env()
    forced = env.create_run(env.upload_config())
    token = _claim(env)["run_token"]
    assert env.api("POST", f"/runs/{forced['id']}/actions/cancel").status_code == 202
    assert env.api("POST", f"/runs/{forced['id']}/actions/force-cancel").status_code == 202
    assert env.run(forced["id"])["attributes"]["status"] == "force_canceled"
    assert _as(env, token, f"/workspaces/{env.workspace_id}") == 401
    errored = env.create_run(env.upload_config())
    spec = _claim(env)
    finish = {"runner_id": "r1", "status": "errored", "error_message": "boom"}
    assert env.runner("POST", f"/jobs/{spec['job_id']}/finish", json=finish).status_code == 200
    assert env.run(errored["id"])["attributes"]["status"] == "errored"
    assert _as(env, spec["run_token"], f"/workspaces/{env.workspace_id}") == 401
