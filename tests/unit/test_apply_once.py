"""An apply never runs twice: a lost apply is retried only if terraform had not started applying."""

from __future__ import annotations

from typing import Any

from run_helpers import RunEnv, make_run_env
from state_helpers import null_resource, state_bytes, sv_body
from terrace.domain import runs as rs


def _claim(env: RunEnv, runner_id: str = "r1") -> dict[str, Any]:
    (queued,) = env.queued()
    env.queue._now_ms = lambda: queued.available_at_ms  # a retry's back-off is over
    return env.claim(runner_id)


def _confirmed_apply(env: RunEnv) -> dict[str, Any]:
    """A run whose plan finished and whose apply is queued."""
    run = env.create_run(env.upload_config())
    env.work_next()
    assert env.api("POST", f"/runs/{run['id']}/actions/apply", {}).status_code == 202
    assert env.run(run["id"])["attributes"]["status"] == rs.APPLY_QUEUED
    return run


def _applying(env: RunEnv, job_id: str, runner_id: str = "r1") -> Any:
    return env.runner("POST", f"/jobs/{job_id}/applying", json={"runner_id": runner_id})


def _locked(env: RunEnv) -> bool:
    return bool(env.api("GET", f"/workspaces/{env.workspace_id}").json()["data"]["attributes"]["locked"])


def test_an_apply_lost_before_terraform_applied_is_retried_and_completes() -> None:
    env = make_run_env(job_heartbeat_timeout_s=0)
    run = _confirmed_apply(env)
    first = _claim(env)  # the runner dies during init: terraform apply never started

    assert env.container.reaper.reap_once()["retried"] == 1
    assert env.run(run["id"])["attributes"]["status"] == rs.APPLY_QUEUED
    (queued,) = env.queued()
    assert (queued.lane, queued.job_id, queued.attempt) == ("apply", first["job_id"], 2)

    second = _claim(env, runner_id="r2")
    announced = _applying(env, second["job_id"], runner_id="r2")
    assert announced.status_code == 200, announced.text
    assert announced.json() == {"cancel": False, "force_cancel": False}
    assert _applying(env, second["job_id"], runner_id="r2").status_code == 200  # a retried call: same answer
    assert _applying(env, first["job_id"], runner_id="r1").status_code == 409  # the lost attempt may not apply
    done = env.runner("POST", f"/jobs/{second['job_id']}/finish", json={"runner_id": "r2", "status": "finished"})
    assert done.json()["run_status"] == rs.APPLIED
    assert not _locked(env)


def test_an_apply_lost_after_terraform_started_errors_keeps_its_state_and_unlocks() -> None:
    env = make_run_env(job_heartbeat_timeout_s=0)
    run = _confirmed_apply(env)
    spec = _claim(env)
    assert _applying(env, spec["job_id"]).status_code == 200
    # the dead attempt's terraform created a resource and persisted state with its run token
    token = {"Authorization": f"Bearer {spec['run_token']}", "Content-Type": "application/vnd.api+json"}
    partial = state_bytes(1, resources=[null_resource("a", "111")])
    written = env.client.post(
        f"/api/v2/workspaces/{env.workspace_id}/state-versions", json=sv_body(partial, 1), headers=token
    )
    assert written.status_code == 201, written.text
    env.runner("PUT", f"/jobs/{spec['job_id']}/logs?offset=0", content=b"null_resource.a: Creating...\n")

    assert env.container.reaper.reap_once()["retried"] == 1

    attrs = env.run(run["id"])["attributes"]
    assert attrs["status"] == rs.ERRORED
    assert "the apply was interrupted" in attrs["error-message"] and "state may be incomplete" in attrs["error-message"]
    assert env.queued() == []  # nothing queued again: the apply never runs twice
    assert not _locked(env)  # released through the normal finish path
    current = env.api("GET", f"/workspaces/{env.workspace_id}/current-state-version").json()["data"]
    assert current["id"] == written.json()["data"]["id"]  # the state the dead attempt wrote stays
    apply_id = spec["job_id"]
    body = env.container.logs.read(apply_id, 0, 100_000, final=True, archived=True)
    assert body.startswith(b"\x02null_resource.a: Creating...\n") and body.endswith(b"\x03")
    assert b"the apply was interrupted" in body and b"check it before running again" in body
    # the dead attempt's token is revoked and its late calls are refused
    assert env.client.get(f"/api/v2/workspaces/{env.workspace_id}", headers=token).status_code == 401
    assert env.runner("PUT", f"/jobs/{apply_id}/logs?offset=30", content=b"late\n").status_code == 409
    assert _applying(env, apply_id).status_code == 409
    assert env.container.reaper.reap_once()["retried"] == 0


def test_a_lost_plan_is_still_retried_and_never_counts_as_applying() -> None:
    env = make_run_env(job_heartbeat_timeout_s=0)
    run = env.create_run(env.upload_config())
    spec = _claim(env)
    assert _applying(env, spec["job_id"]).status_code == 409  # plans change nothing: nothing to announce

    assert env.container.reaper.reap_once()["retried"] == 1
    assert env.run(run["id"])["attributes"]["status"] == rs.PLAN_QUEUED
    assert [q.attempt for q in env.queued()] == [2]


def test_a_cancel_before_the_apply_starts_answers_cancel_and_records_nothing() -> None:
    env = make_run_env(job_heartbeat_timeout_s=0)
    run = _confirmed_apply(env)
    spec = _claim(env)
    assert env.api("POST", f"/runs/{run['id']}/actions/cancel", {}).status_code == 202

    answer = _applying(env, spec["job_id"])

    assert answer.status_code == 200 and answer.json()["cancel"] is True
    assert env.container.run_store.load(run["id"]).apply.apply_started_at is None


def test_state_written_with_a_run_token_belongs_to_that_run() -> None:
    env = make_run_env()
    run = _confirmed_apply(env)
    spec = _claim(env)
    token = {"Authorization": f"Bearer {spec['run_token']}", "Content-Type": "application/vnd.api+json"}
    body = sv_body(state_bytes(1, resources=[null_resource("a", "111")]), 1)
    body["data"]["relationships"] = {"run": {"data": {"type": "runs", "id": "run-someoneelse"}}}
    written = env.client.post(f"/api/v2/workspaces/{env.workspace_id}/state-versions", json=body, headers=token)
    assert written.status_code == 201, written.text
    assert written.json()["data"]["relationships"]["run"]["data"]["id"] == run["id"]
