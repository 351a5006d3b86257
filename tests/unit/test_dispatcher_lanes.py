"""The dispatcher (the scaler) on the priority lanes: global priority under contention, lost and duplicated
messages, the capacity counter under concurrent ticks, and the queued deadline that follows the backlog.
Runners here are the runner API's real client calls (TestClient) with the tokens their enrollment codes give."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from run_helpers import RunEnv
from terrace.adapters.definitions import LANE_PRIORITY
from terrace.adapters.lanes import LaneMessage
from terrace.adapters.memory_lanes import MemoryLanes
from terrace.adapters.runner_launcher import LiveRunner, runner_environment
from terrace.domain import clock
from terrace.services.runs import lane_reads, runner_slots
from terrace.services.runs import scaler as scaler_module
from terrace.services.runs.runner_slots import RunnerSlots
from terrace.services.runs.scaler import Scaler
from test_runner_tenancy import FakeLauncher, _scaler_env, enrolled


def lanes(env: RunEnv) -> MemoryLanes:
    assert isinstance(env.container.lanes, MemoryLanes)
    return env.container.lanes


def workspace(env: RunEnv, organization: str, name: str) -> str:
    body = {"data": {"type": "workspaces", "attributes": {"name": name, "execution-mode": "remote"}}}
    response = env.api("POST", f"/organizations/{organization}/workspaces", body)
    assert response.status_code == 201, response.text
    return str(response.json()["data"]["id"])


def finish(env: RunEnv, token: str, spec: dict[str, Any]) -> None:
    body = {"runner_id": "r", "status": "finished", "has_changes": True, "resource_additions": 1}
    done = env.runner("POST", f"/jobs/{spec['job_id']}/finish", json=body, token=token)
    assert done.status_code == 200, done.text


def status(env: RunEnv, run_id: str) -> str:
    return str(env.run(run_id)["attributes"]["status"])


def test_with_one_runner_an_apply_queued_after_a_speculative_plan_starts_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner_slots, "GRACE_S", -1)  # a runner gone frees its slot at once (not minutes later)
    env, globex_ws, launcher = _scaler_env(max_runners=1)
    scaler = env.container.scaler
    planned = env.create_run(env.upload_config(workspace_id=globex_ws), workspace_id=globex_ws)
    assert scaler.scale_once()["started"] == {"globex": 1}
    (first,) = launcher.runners
    token = enrolled(env, first)
    finish(env, token, env.claim("r", token=token))
    assert status(env, planned["id"]) == "cost_estimated"  # awaiting confirmation
    busy_ws = workspace(env, "globex", "busy")
    env.create_run(env.upload_config(workspace_id=busy_ws), workspace_id=busy_ws)
    busy = env.claim("r", token=token)  # the one runner is busy: capacity is full
    speculative = env.create_run(env.upload_config(speculative=True))  # acme's speculative plan waits ...
    assert status(env, speculative["id"]) == "plan_queued"
    assert scaler.scale_once()["started"] == {}
    applied = env.api("POST", f"/runs/{planned['id']}/actions/apply", {})  # ... then globex's apply is queued
    assert applied.status_code == 202, applied.text
    summary = scaler.scale_once()
    assert summary["started"] == {} and summary["blocked"] == 1, summary  # globex is at its maximum, acme waits
    finish(env, token, busy)
    launcher.runners.clear()  # the busy runner finished and exited: one room, two organizations waiting
    assert scaler.scale_once()["started"] == {"globex": 1}  # the apply's organization, though acme queued first
    (second,) = launcher.runners
    spec = env.claim("r2", token=enrolled(env, second))
    assert (spec["run_id"], spec["phase"]) == (planned["id"], "apply")
    assert status(env, speculative["id"]) == "plan_queued"
    assert [m.job_id for m in lanes(env).messages("apply")] == [spec["job_id"]]
    launcher.runners.clear()
    assert scaler.scale_once()["started"] == {"acme": 1}  # then the speculative plan
    assert lanes(env).messages("apply") == []  # a claimed job's message is deleted


def test_a_lost_lane_message_is_sent_again_and_its_job_is_claimed_once() -> None:
    env, _, launcher = _scaler_env(queued_resend_s=0)
    run = env.create_run(env.upload_config())
    (message,) = lanes(env).messages("plan")
    for delivery in lanes(env).receive("plan", 10, hide_s=30):
        lanes(env).delete(delivery)  # lost
    assert env.container.scaler.scale_once()["started"] == {}
    assert env.container.reaper.reap_once()["resent"] == 1  # the reaper sends a queued phase's message again
    assert lanes(env).messages("plan") == [message]
    assert env.container.scaler.scale_once()["started"] == {"acme": 1}
    token = enrolled(env, launcher.runners[0])
    assert env.claim("r", token=token)["run_id"] == run["id"]
    assert env.runner("POST", "/jobs/next", json={"runner_id": "r2"}, token=token).status_code == 204


def test_duplicated_messages_start_one_runner_and_go_once_the_job_is_claimed() -> None:
    env, _, launcher = _scaler_env()
    run = env.create_run(env.upload_config())
    (message,) = lanes(env).messages("plan")
    for _ in range(3):
        lanes(env).send("plan", message)
    assert env.container.scaler.scale_once()["started"] == {"acme": 1}
    assert lanes(env).messages("plan") == [message]  # the duplicates are deleted
    token = enrolled(env, launcher.runners[0])
    assert env.claim("r", token=token)["run_id"] == run["id"]
    assert env.runner("POST", "/jobs/next", json={"runner_id": "r2"}, token=token).status_code == 204
    assert env.container.scaler.scale_once()["started"] == {}
    assert lanes(env).messages("plan") == []


def test_a_stale_message_is_harmless() -> None:
    env, _, launcher = _scaler_env()
    lanes(env).send("apply", LaneMessage("acme", "apply-gone", "run-gone", "apply", 1))
    assert env.container.scaler.scale_once()["started"] == {} and launcher.runners == []
    assert all(lanes(env).messages(lane) == [] for lane in LANE_PRIORITY)


class LaggingLauncher(FakeLauncher):
    """`ListTasks` lags: a task just started is not listed; both ticks read it before either launches."""

    def __init__(self, barrier: threading.Barrier) -> None:
        super().__init__()
        self.barrier = barrier

    def live(self) -> list[LiveRunner]:
        self.barrier.wait(30)
        return []


def test_concurrent_dispatchers_never_start_more_than_the_maximum(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lane_reads, "DRAIN_MAX", 3)  # each tick receives its own part of the backlog (as SQS)
    env, _, _ = _scaler_env(max_runners=2)
    for n in range(6):
        ws = workspace(env, "acme", f"w{n}")
        env.create_run(env.upload_config(workspace_id=ws), workspace_id=ws)
    barrier = threading.Barrier(2)
    launchers = [LaggingLauncher(barrier), LaggingLauncher(barrier)]
    c = env.container
    scalers = [
        Scaler(
            c.run_store,
            launcher,
            c.settings,
            c.lanes,
            RunnerSlots(c.run_store.slots, 2),
            c.runner_credentials,
            wake=threading.Event(),
        )
        for launcher in launchers
    ]
    threads = [threading.Thread(target=scaler.scale_once) for scaler in scalers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sum(len(launcher.runners) for launcher in launchers) == 2
    barrier.reset()
    threads = [threading.Thread(target=scaler.scale_once) for scaler in scalers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sum(len(launcher.runners) for launcher in launchers) == 2  # still not listed: the leases hold


def test_a_failed_launch_gives_its_slot_back() -> None:
    env, _, launcher = _scaler_env(max_runners=1)
    launcher.capacity = 0  # every launch fails
    env.create_run(env.upload_config())
    summary = env.container.scaler.scale_once()
    assert summary["started"] == {} and summary["launch_failures"] == 1
    assert env.container.runner_slots.held() == 0
    launcher.capacity = 1
    assert env.container.scaler.scale_once()["started"] == {"acme": 1}


def test_the_queued_deadline_follows_the_backlog(monkeypatch: pytest.MonkeyPatch) -> None:
    env, _, _ = _scaler_env(queued_deadline_s=600)
    run = env.create_run(env.upload_config())
    now = clock.epoch()
    monkeypatch.setattr(clock, "epoch", lambda: now + 300)
    env.container.runner_slots.saturated()  # the dispatcher left phases waiting for want of room
    monkeypatch.setattr(clock, "epoch", lambda: now + 700)
    assert env.container.reaper.reap_once()["errored"] == 0  # waited 700 s, but behind a burst
    assert status(env, run["id"]) == "plan_queued"
    monkeypatch.setattr(clock, "epoch", lambda: now + 901)
    assert env.container.reaper.reap_once()["errored"] == 1  # 600 s with room and still nobody took it


def test_a_speculative_plan_gets_a_runner_of_its_lane_which_takes_no_other_job(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a launcher that runs the speculative lane on Spot (ECS: FARGATE_SPOT), a speculative plan gets a runner
    restricted to that lane; an idle one of them does not count for a plan; it claims speculative plans only (the
    runner API's real `next` with its lanes), and what it hands back on SIGTERM is queued again for another."""
    monkeypatch.setattr(FakeLauncher, "spot_lanes", ("speculative",))
    env, _, launcher = _scaler_env(max_runners=4, job_retry_base_s=0)
    scaler = env.container.scaler
    speculative = env.create_run(env.upload_config(speculative=True))
    summary = scaler.scale_once()
    assert summary["started"] == {"acme": 1} and summary["started_for_spot_lanes"] == 1
    (spot,) = launcher.runners
    assert spot.lanes == ("speculative",) and runner_environment(spot)["TERRACE_RUNNER_LANES"] == "speculative"
    token = enrolled(env, spot)
    assert scaler.scale_once()["started"] == {}  # the idle Spot runner covers the speculative plan
    planned = env.create_run(env.upload_config())  # a plan (it may be applied): not for a Spot runner
    summary = scaler.scale_once()
    assert summary["started"] == {"acme": 1} and summary["started_for_spot_lanes"] == 0
    assert launcher.runners[1].lanes == ()
    ask = {"runner_id": "spot", "lanes": ["speculative"]}
    spec = env.runner("POST", "/jobs/next", json=ask, token=token).json()
    assert spec["run_id"] == speculative["id"]  # though the plan is on a higher lane
    assert env.runner("POST", "/jobs/next", json=ask, token=token).status_code == 204  # never the plan
    released = env.runner("POST", f"/jobs/{spec['job_id']}/release", json={"runner_id": "spot"}, token=token)
    assert released.status_code == 200, released.text  # an interruption's hand-back: queued again, attempt 2
    again = env.runner("POST", "/jobs/next", json=ask, token=token).json()
    assert (again["run_id"], again["attempt"]) == (speculative["id"], 2)
    assert env.claim("any", token=enrolled(env, launcher.runners[1]))["run_id"] == planned["id"]
    bad = env.runner("POST", "/jobs/next", json={"runner_id": "x", "lanes": ["fast"]}, token=token)
    assert bad.status_code == 422


def test_a_run_queued_while_a_tick_reads_the_open_runs_keeps_its_lane_message(monkeypatch: pytest.MonkeyPatch) -> None:
    """A tick read the open runs, then the lanes: a run queued in between (its message sent after that read) looked
    gone and its message was deleted, so no runner came until the reaper sent it again, minutes later, while room
    was free (found by tests/proof/test_load_runs.py: the third organization waited two minutes)."""
    monkeypatch.setattr(scaler_module, "EXPECT_S", -1)  # the configuration version's expectation plays no part
    env, _, launcher = _scaler_env()
    scaler = env.container.scaler
    cv_id = env.upload_config()
    read, created = scaler._runner_entries, []

    def open_runs_then_a_run_comes() -> list[dict[str, Any]]:
        entries = read()
        if not created:
            created.append(env.create_run(cv_id))  # queued (and sent to its lane) just after the tick's read
        return entries

    monkeypatch.setattr(scaler, "_runner_entries", open_runs_then_a_run_comes)
    scaler.scale_once()
    assert [m.run_id for m in lanes(env).messages("plan")] == [created[0]["id"]]
    assert scaler.scale_once()["started"] == {"acme": 1}
    spec = env.claim("r", token=enrolled(env, launcher.runners[0]))
    assert spec["run_id"] == created[0]["id"]
