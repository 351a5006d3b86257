"""The runner that planned a run applies it when it can: finishing an auto-apply plan with `keep_for_apply` hands
that runner the apply, claimed, in the finish answer; `held-runs` tells a runner which plan folders it may still
apply (its own plans, awaiting or queued for apply), so it drops the others."""

from __future__ import annotations

from typing import Any

from run_helpers import RunEnv, make_run_env


def _finish_plan(env: RunEnv, runner_id: str, keep: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    spec = env.claim(runner_id)
    assert spec["phase"] == "plan"
    body = {"runner_id": runner_id, "status": "finished", "has_changes": True, "keep_for_apply": keep}
    done = env.runner("POST", f"/jobs/{spec['job_id']}/finish", json=body)
    assert done.status_code == 200, done.text
    return spec, dict(done.json())


def _held(env: RunEnv, runner_id: str, run_ids: list[str], token: str | None = None) -> Any:
    return env.runner("POST", "/held-runs", json={"runner_id": runner_id, "run_ids": run_ids}, token=token)


def test_an_auto_apply_plan_hands_its_apply_to_the_runner_that_kept_the_folder() -> None:
    env = make_run_env()
    run = env.create_run(env.upload_config(), **{"auto-apply": True})
    spec, answer = _finish_plan(env, "r1", keep=True)
    apply = answer["next_job"]
    assert answer["run_status"] == "applying"
    assert (apply["phase"], apply["run_id"], apply["job_id"]) == ("apply", run["id"], f"apply-{run['id'][4:]}")
    assert apply["run_token"] != spec["run_token"] and apply["plan_file_url"]
    assert env.run(run["id"])["attributes"]["status"] == "applying"
    stored = env.container.run_store.load(run["id"])
    assert stored.apply.runner_id == stored.plan.runner_id and stored.apply.runner_id.startswith("r1@")
    # the queue entry the confirmation left is no job for anyone else: another runner finds nothing
    assert env.runner("POST", "/jobs/next", json={"runner_id": "r2"}).status_code == 204
    beat = env.runner("POST", f"/jobs/{apply['job_id']}/heartbeat", json={"runner_id": "r1"})
    assert beat.status_code == 200 and beat.json() == {"cancel": False, "force_cancel": False}


def test_without_a_kept_folder_the_apply_is_queued_for_any_runner() -> None:
    env = make_run_env()
    run = env.create_run(env.upload_config(), **{"auto-apply": True})
    _, answer = _finish_plan(env, "r1", keep=False)
    assert answer == {"run_status": "apply_queued", "next_job": None}
    apply = env.claim("r2")
    assert (apply["phase"], apply["run_id"]) == ("apply", run["id"])


def test_held_runs_keeps_only_the_runners_own_plans_that_may_still_apply() -> None:
    env = make_run_env()
    run = env.create_run(env.upload_config())
    _, answer = _finish_plan(env, "r1", keep=True)
    assert answer["next_job"] is None and answer["run_status"] in ("planned", "cost_estimated")
    mine = _held(env, "r1", [run["id"], "run-doesnotexist"])
    assert mine.status_code == 200 and mine.json()["run_ids"] == [run["id"]]
    assert _held(env, "r2", [run["id"]]).json()["run_ids"] == []  # not its plan
    sibling = env.container.runner_credentials.runner_token("acme")  # same name, another runner token
    assert _held(env, "r1", [run["id"]], token=sibling).json()["run_ids"] == []
    discard = env.api("POST", f"/runs/{run['id']}/actions/discard", {})
    assert discard.status_code == 202, discard.text
    assert _held(env, "r1", [run["id"]]).json()["run_ids"] == []


def test_held_runs_forgets_a_run_applied_by_another_runner_and_refuses_other_callers() -> None:
    env = make_run_env()
    run = env.create_run(env.upload_config())
    _finish_plan(env, "r1", keep=True)
    assert env.api("POST", f"/runs/{run['id']}/actions/apply", {}).status_code == 202
    assert _held(env, "r1", [run["id"]]).json()["run_ids"] == [run["id"]]  # queued: still its to take
    env.claim("r2")  # another runner was quicker
    assert _held(env, "r1", [run["id"]]).json()["run_ids"] == []
    user = env.client.post("/api/runner/held-runs", json={"runner_id": "u", "run_ids": []}, headers=env.headers)
    assert user.status_code == 403
    bad = env.runner("POST", "/held-runs", json={"runner_id": "", "run_ids": []})
    assert bad.status_code == 422 and bad.json()["errors"]
