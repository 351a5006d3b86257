"""What the cold paths of a run skip stays invisible: the stage-usage markers (`domain/stage_usage.py`), a new run
written with its first status change (`RunScheduler.admit`), a run token revoked in the finishing write."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from run_helpers import RunEnv, make_run_env
from terrace.domain import stage_usage
from terrace.services import shared_keys
from terrace.services.runs.stage_participants import StageContext, Verdict
from terrace.services.workspaces.store import to_item as workspace_item


class StandIn:
    """A run task stand-in that takes part in every pre-plan stage it is asked about."""

    kind = stage_usage.RUN_TASKS

    def __init__(self) -> None:
        self.asked: list[str] = []

    def begin(self, context: StageContext) -> list[str]:
        self.asked.append(context.stage)
        return [f"tr-{context.stage}"] if context.stage == "pre_plan" else []

    def verdict(self, context: StageContext) -> Verdict:
        return "pending"

    def overridden(self, context: StageContext) -> None:
        pass


@pytest.fixture
def env() -> RunEnv:
    return make_run_env()


def markers(env: RunEnv) -> set[str]:
    return {str(item["sk"]) for item in env.container.table.query(shared_keys.stage_usage_partition(env.organization))}


def status(env: RunEnv, run: dict[str, Any]) -> str:
    return str(env.run(run["id"])["attributes"]["status"])


def test_an_organization_without_run_tasks_is_not_asked_about_them(env: RunEnv) -> None:
    assert markers(env) == {stage_usage.KNOWN}
    participant = StandIn()
    env.container.stage_participants.append(participant)
    run = env.create_run(env.upload_config())
    assert participant.asked == [] and status(env, run) == "plan_queued"


def test_the_first_run_task_marks_its_organization_and_its_runs_ask_again(env: RunEnv) -> None:
    participant = StandIn()
    env.container.stage_participants.append(participant)
    body = {"data": {"type": "tasks", "attributes": {"name": "check", "url": "https://tasks.example.com/hook"}}}
    assert env.api("POST", f"/organizations/{env.organization}/tasks", body).status_code == 201
    assert markers(env) == {stage_usage.KNOWN, stage_usage.RUN_TASKS}
    run = env.create_run(env.upload_config())
    assert participant.asked == ["pre_plan"] and status(env, run) == "pre_plan_running"


def test_a_policy_set_marks_its_organization(env: RunEnv) -> None:
    body = {"data": {"type": "policy-sets", "attributes": {"name": "guard", "kind": "opa"}}}
    assert env.api("POST", f"/organizations/{env.organization}/policy-sets", body).status_code == 201
    assert markers(env) == {stage_usage.KNOWN, stage_usage.POLICY_SETS}


def test_an_organization_older_than_its_markers_asks_every_participant(env: RunEnv) -> None:
    env.container.table.delete(*shared_keys.stage_usage_marker(env.organization, stage_usage.KNOWN).values())
    participant = StandIn()
    env.container.stage_participants.append(participant)
    run = env.create_run(env.upload_config())
    assert participant.asked == ["pre_plan"] and status(env, run) == "pre_plan_running"


def test_deleting_an_organization_deletes_its_markers(env: RunEnv) -> None:
    assert env.api("DELETE", f"/organizations/{env.organization}").status_code == 204
    assert markers(env) == set()


def test_a_new_run_is_written_with_its_first_status_change(env: RunEnv) -> None:
    run = env.create_run(env.upload_config())
    events = env.api("GET", f"/runs/{run['id']}/run-events").json()["data"]
    assert [e["attributes"]["action"] for e in events] == ["pending", "plan_queued"]
    ws = env.api("GET", f"/workspaces/{env.workspace_id}").json()["data"]
    assert ws["relationships"]["locked-by"]["data"] == {"type": "runs", "id": run["id"]}
    assert [job.job_id for job in env.queued()] == [f"plan-{run['id'].split('-', 1)[1]}"]


def test_a_new_run_never_starts_ahead_of_an_older_pending_one(env: RunEnv) -> None:
    """A workspace left free with a pending run (its promotion lost): the next run promotes the older one."""
    assert env.api("POST", f"/workspaces/{env.workspace_id}/actions/lock", {}).status_code == 200
    older = env.create_run(env.upload_config())
    ws = env.container.workspaces.load(env.workspace_id)
    env.container.table.put(workspace_item(replace(ws, lock=None, current_run_id=None)))  # its promotion lost
    newer = env.create_run(env.upload_config())
    assert (status(env, older), status(env, newer)) == ("plan_queued", "pending")
    assert env.container.workspaces.load(env.workspace_id).current_run_id == older["id"]


def test_a_run_token_issued_before_hashes_were_recorded_is_still_revoked(env: RunEnv) -> None:
    run = env.create_run(env.upload_config())
    spec = env.claim()
    item = env.container.table.get(run["id"], "run")
    assert item is not None and list(item["token_hashes"]) == item["token_ids"]
    env.container.table.put({**item, "token_hashes": {}})  # as a run claimed by an older server
    finish = {"runner_id": "r1", "status": "finished", "has_changes": False}
    assert env.runner("POST", f"/jobs/{spec['job_id']}/finish", json=finish).status_code == 200
    headers = {"Authorization": f"Bearer {spec['run_token']}"}
    assert env.client.get(f"/api/v2/workspaces/{env.workspace_id}", headers=headers).status_code == 401


def test_a_finished_phase_leaves_no_token_on_its_run(env: RunEnv) -> None:
    run = env.create_run(env.upload_config())
    spec = env.work_next()
    item = env.container.table.get(run["id"], "run")
    assert item is not None and item["token_ids"] == [] and item["token_hashes"] == {}
    headers = {"Authorization": f"Bearer {spec['run_token']}"}
    assert env.client.get(f"/api/v2/workspaces/{env.workspace_id}", headers=headers).status_code == 401
