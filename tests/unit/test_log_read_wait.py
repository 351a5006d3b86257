"""A log-read URL with nothing new for a running phase holds the read until bytes (or the phase's end) arrive,
so the CLI sees them at once instead of after its own 0.5-2 s back-off; it gives up after `read_wait_s`."""

from __future__ import annotations

from run_helpers import RunEnv, make_run_env
from terrace.services.runs.logs import LogService


def _running_plan(env: RunEnv) -> tuple[dict[str, object], str]:
    env.create_run(env.upload_config())
    spec = env.claim("r1")
    assert env.runner("PUT", f"/jobs/{spec['job_id']}/logs?offset=0", content=b"first\n").status_code == 204
    plan = env.api("GET", f"/plans/{spec['job_id']}").json()["data"]["attributes"]
    return spec, "/" + str(plan["log-read-url"]).split("://", 1)[1].split("/", 1)[1]


def _logs(env: RunEnv) -> LogService:
    logs = env.container.logs
    assert isinstance(logs, LogService)
    return logs


def test_a_read_past_the_end_waits_for_the_next_bytes() -> None:
    env = make_run_env()
    spec, path = _running_plan(env)
    sleeps: list[float] = []

    def runner_writes_meanwhile(seconds: float) -> None:  # the read found nothing new and waits: bytes come
        sleeps.append(seconds)
        if len(sleeps) == 2:
            put = env.runner("PUT", f"/jobs/{spec['job_id']}/logs?offset=6", content=b"second\n")
            assert put.status_code == 204

    logs = _logs(env)
    logs._sleep, logs._read_wait_s = runner_writes_meanwhile, 60.0
    answer = env.client.get(f"{path}?limit=1000&offset=7")  # STX + "first\n" already read
    assert answer.status_code == 200 and answer.content == b"second\n"
    assert len(sleeps) == 2


def test_the_phases_end_answers_a_waiting_read_with_etx() -> None:
    env = make_run_env()
    spec, path = _running_plan(env)

    def plan_finishes(_seconds: float) -> None:
        done = env.runner("POST", f"/jobs/{spec['job_id']}/finish", json={"runner_id": "r1", "status": "finished"})
        assert done.status_code == 200, done.text

    logs = _logs(env)
    logs._sleep, logs._read_wait_s = plan_finishes, 60.0
    assert env.client.get(f"{path}?limit=1000&offset=7").content == b"\x03"


def test_a_read_gives_up_after_the_wait_and_a_finished_phase_never_waits() -> None:
    env = make_run_env()
    spec, path = _running_plan(env)
    sleeps: list[float] = []
    logs = _logs(env)
    logs._sleep, logs._read_wait_s = sleeps.append, 0.0
    assert env.client.get(f"{path}?limit=1000&offset=7").content == b""  # nothing new within the wait
    assert sleeps == []
    env.runner("POST", f"/jobs/{spec['job_id']}/finish", json={"runner_id": "r1", "status": "finished"})
    logs._read_wait_s = 60.0
    assert env.client.get(f"{path}?limit=1000&offset=100").content == b""  # ended: answered at once
    assert sleeps == []
