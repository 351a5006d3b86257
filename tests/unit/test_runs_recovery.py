"""Infrastructure failures: missed heartbeats are retried with back-off, then errored; deadlines hold."""

from __future__ import annotations

from run_helpers import make_run_env
from terrace.domain import runs as rs


def _claim(env, runner_id: str = "r1") -> dict:  # type: ignore[no-untyped-def]
    return env.claim(runner_id)


def test_missed_heartbeat_is_retried_with_backoff_then_completes() -> None:
    env = make_run_env(job_heartbeat_timeout_s=0)
    run = env.create_run(env.upload_config())
    spec = _claim(env)
    env.runner("PUT", f"/jobs/{spec['job_id']}/logs?offset=0", content=b"first attempt\n")
    summary = env.container.reaper.reap_once()
    assert summary["retried"] == 1
    assert env.run(run["id"])["attributes"]["status"] == "plan_queued"
    (queued,) = env.queued()
    assert (queued.lane, queued.attempt, queued.delay_s) == ("plan", 2, 2)
    assert env.runner("POST", "/jobs/next", json={"runner_id": "r2"}).status_code == 204  # backing off
    env.queue._now_ms = lambda: queued.available_at_ms  # the back-off is over
    # the dead runner's late finish is refused; the new attempt completes
    late = env.runner("POST", f"/jobs/{spec['job_id']}/finish", json={"runner_id": "r1", "status": "finished"})
    assert late.status_code == 409
    env.work_next(runner_id="r2", log=b"second attempt\n")
    assert env.run(run["id"])["attributes"]["status"] == "cost_estimated"
    body = env.container.logs.read(spec["job_id"], 0, 10_000, final=True, archived=True)
    assert b"first attempt" in body and b"retrying (2 of 5)" in body and body.endswith(b"second attempt\n\x03")


def test_five_lost_runners_error_the_run_with_a_clear_message() -> None:
    env = make_run_env(job_heartbeat_timeout_s=0)
    run = env.create_run(env.upload_config())
    delays = []
    for attempt in range(1, 6):
        spec = _claim(env, runner_id=f"r{attempt}")
        assert spec["attempt"] == attempt
        env.container.reaper.reap_once()
        if attempt < 5:
            (queued,) = env.queued()
            delays.append(queued.delay_s)
            env.queue._now_ms = lambda at=queued.available_at_ms: at  # skip the back-off
    assert delays == [2, 4, 8, 16]
    attrs = env.run(run["id"])["attributes"]
    assert attrs["status"] == "errored"
    assert "failed 5 times" in attrs["error-message"]
    assert env.api("GET", f"/workspaces/{env.workspace_id}").json()["data"]["attributes"]["locked"] is False


def test_unclaimed_job_is_resent_then_errored_at_its_deadline() -> None:
    env = make_run_env(queued_resend_s=-1)
    run = env.create_run(env.upload_config())
    assert env.queue.take("acme") is not None  # taken, then lost before its claim
    assert env.queued() == []
    assert env.container.reaper.reap_once()["resent"] == 1
    assert [(q.phase, q.attempt) for q in env.queued()] == [("plan", 1)]  # re-indexed
    env.container.reaper.reap_once()
    assert len(env.queued()) == 1  # not twice
    env2 = make_run_env(queued_deadline_s=-1)
    run2 = env2.create_run(env2.upload_config())
    assert env2.container.reaper.reap_once()["errored"] == 1
    assert "no runner claimed" in env2.run(run2["id"])["attributes"]["error-message"]
    assert env.run(run["id"])["attributes"]["status"] == "plan_queued"


def test_unconfirmed_plan_is_discarded_after_its_deadline() -> None:
    env = make_run_env(confirm_deadline_s=-1)
    run = env.create_run(env.upload_config())
    env.work_next()
    assert env.container.reaper.reap_once()["discarded"] == 1
    assert env.run(run["id"])["attributes"]["status"] == rs.DISCARDED


def test_reaper_promotes_a_stuck_workspace_queue() -> None:
    env = make_run_env()
    run = env.create_run(env.upload_config())
    # simulate a crash between the final write and the promotion: a pending run behind a free workspace
    second = env.create_run(env.upload_config())
    stored = env.container.run_store.load(run["id"])
    env.container.scheduler.finish(stored, stored.version, rs.ERRORED, "simulated")
    assert env.run(second["id"])["attributes"]["status"] == "plan_queued"
    assert env.container.reaper.reap_once()["promoted"] == 0


def test_lanes_priority_apply_before_plan_before_speculative() -> None:
    env = make_run_env()
    other = env.api(
        "POST", "/organizations/acme/workspaces", {"data": {"type": "workspaces", "attributes": {"name": "other"}}}
    ).json()["data"]["id"]
    first = env.create_run(env.upload_config())
    env.create_run(env.upload_config(speculative=True))
    env.work_next()  # plan of `first` (plan lane beats speculative)
    env.create_run(env.upload_config(workspace_id=other), workspace_id=other)
    env.api("POST", f"/runs/{first['id']}/actions/apply", {})
    order = []
    while (taken := env.queue.take("acme")) is not None:
        order.append(taken.lane)
    assert order == ["apply", "plan", "speculative"]


def test_queue_and_capacity_report_the_real_queue() -> None:
    env = make_run_env()
    env.create_run(env.upload_config())
    env.create_run(env.upload_config(speculative=True))
    _claim(env)
    queue = env.api("GET", "/organizations/acme/runs/queue").json()
    assert [r["attributes"]["status"] for r in queue["data"]] == ["planning", "plan_queued"]
    capacity = env.api("GET", "/organizations/acme/capacity").json()["data"]["attributes"]
    assert capacity == {"pending": 1, "running": 1}
