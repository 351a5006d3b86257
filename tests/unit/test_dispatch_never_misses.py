"""The dispatcher never misses a queued run: SQS's short poll may answer empty while a lane holds messages
(`tests/contract/sampling_sqs.py` answers as SQS does, from a random sample of its servers), so a tick that finds a
phase queued in the table without its message reads the lanes again completely (a long poll); and every message
sent to a lane (an enqueue, a retry, the reaper's resend) wakes the dispatcher."""

from __future__ import annotations

from typing import Any

import pytest
from run_helpers import RunEnv
from sampling_sqs import SamplingSqs, sampling_lanes
from terrace.adapters.kicking_lanes import KickingLanes
from terrace.adapters.lanes import LaneMessage
from terrace.adapters.memory_lanes import MemoryLanes
from terrace.services.runs.lane_reads import LONG_POLL_S
from test_runner_tenancy import FakeLauncher, _scaler_env


def sampled_env(seed: int, sampled: float = 0.25) -> tuple[RunEnv, FakeLauncher, SamplingSqs]:
    lanes, client = sampling_lanes(seed)
    client.sampled = sampled
    env, _, launcher = _scaler_env(lanes=lanes)
    return env, launcher, client


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_a_queued_run_gets_its_runner_though_the_short_polls_answer_empty(seed: int) -> None:
    env, launcher, client = sampled_env(seed)
    run = env.create_run(env.upload_config())
    client.waits.clear()
    summary = env.container.scaler.scale_once()
    assert LONG_POLL_S in client.waits, "the quick receives found the message: this seed proves nothing"
    assert summary["started"] == {"acme": 1} and summary["backlog"] == 1, summary
    assert env.claim("r", token=env.container.runner_credentials.runner_token("acme"))["run_id"] == run["id"]
    client.waits.clear()
    assert env.container.scaler.scale_once()["started"] == {}  # claimed: its message is deleted, nothing missed
    assert set(client.waits) == {0}


def test_a_tick_that_misses_nothing_never_waits() -> None:
    env, launcher, client = sampled_env(seed=0, sampled=1.0)  # every short poll asks every server
    assert env.container.scaler.scale_once()["started"] == {}  # nothing queued: the scheduled tick stays quick
    env.create_run(env.upload_config())
    assert env.container.scaler.scale_once()["started"] == {"acme": 1}
    assert set(client.waits) == {0}


def test_every_message_sent_to_a_lane_wakes_the_dispatcher() -> None:
    kicks: list[int] = []
    inner = MemoryLanes()
    env, _, _ = _scaler_env(lanes=KickingLanes(inner, lambda: kicks.append(1)), queued_resend_s=0)
    run = env.create_run(env.upload_config())
    assert len(kicks) == 1  # the enqueue
    for delivery in inner.receive("plan", 10, hide_s=30):
        inner.delete(delivery)  # lost
    assert env.container.reaper.reap_once()["resent"] == 1
    assert len(kicks) == 2  # the reaper's resend
    token = env.container.runner_credentials.runner_token("acme")
    spec = env.claim("r", token=token)
    released = env.runner("POST", f"/jobs/{spec['job_id']}/release", json={"runner_id": "r"}, token=token)
    assert released.status_code == 200 and released.json()["run_status"] == "plan_queued", released.text
    assert len(kicks) == 3 and env.run(run["id"])["attributes"]["status"] == "plan_queued"  # a job handed back


def test_a_failed_wake_up_loses_no_message() -> None:
    def broken() -> Any:
        raise RuntimeError("the scaler function is unavailable")

    inner = MemoryLanes()
    env, _, _ = _scaler_env(lanes=KickingLanes(inner, broken))
    env.create_run(env.upload_config())
    assert [m.phase for m in inner.messages("plan")] == ["plan"]


def test_on_aws_the_lanes_wake_the_scaler_function_when_one_is_configured() -> None:
    from terrace.config import Settings
    from terrace.wiring import aws_adapters

    kicks: list[int] = []
    settings = Settings(table_name="t", blob_bucket="b", url_signing_secret="s")
    woken = aws_adapters.lanes(None, settings, lambda: kicks.append(1))
    woken.send("plan", LaneMessage("acme", "plan-1", "run-1", "plan"))
    assert isinstance(woken, KickingLanes) and kicks == [1]
    assert not isinstance(aws_adapters.lanes(None, settings), KickingLanes)  # the scaler itself wakes nothing


def test_a_reaper_pass_that_resends_many_phases_wakes_the_dispatcher_once() -> None:
    """A backlog waiting for room is resent every `queued_resend_s`: one scaler tick reads every lane, so one wake
    after the pass, not one invocation (each listing and receiving) per queued phase."""
    kicks: list[int] = []
    inner = MemoryLanes()
    env, _, _ = _scaler_env(lanes=KickingLanes(inner, lambda: kicks.append(1)), queued_resend_s=0)
    for n in range(3):
        body = {"data": {"type": "workspaces", "attributes": {"name": f"w{n}", "execution-mode": "remote"}}}
        ws = env.api("POST", "/organizations/acme/workspaces", body).json()["data"]["id"]
        env.create_run(env.upload_config(workspace_id=ws), workspace_id=ws)
    kicks.clear()
    assert env.container.reaper.reap_once()["resent"] == 3
    assert kicks == [1] and len(inner.messages("plan")) == 6  # three resent, each still woken for
    assert env.container.reaper.reap_once()["resent"] == 3 and kicks == [1, 1]
