"""Runner tenancy: a runner token works the jobs of its one organization only; jobs are handed out per
organization by the API (highest lane first, after their back-off, never twice); the scaler starts runners
per organization, each with a token of its own."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from run_helpers import RunEnv, make_run_env
from terrace.adapters.memory_table import MemoryTable
from terrace.adapters.runner_launcher import LiveRunner, RunnerCredential
from terrace.adapters.table_job_queue import TableJobQueue
from terrace.domain.principal import PrincipalKind
from terrace.services.access.runner_enrollment import RUNNER_TOKEN_SUBJECT


def _second_org(env: RunEnv, name: str = "globex") -> str:
    env.api("POST", "/organizations", {"data": {"type": "organizations", "attributes": {"name": name, "email": "g@x"}}})
    response = env.api(
        "POST",
        f"/organizations/{name}/workspaces",
        {"data": {"type": "workspaces", "attributes": {"name": "app", "execution-mode": "remote"}}},
    )
    assert response.status_code == 201, response.text
    return str(response.json()["data"]["id"])


def test_a_runner_of_another_organization_cannot_take_or_touch_a_job() -> None:
    env = make_run_env()
    _second_org(env)
    globex_token = env.container.runner_credentials.runner_token("globex")
    env.create_run(env.upload_config())
    # globex's runner is never handed acme's job ...
    assert env.runner("POST", "/jobs/next", json={"runner_id": "g1"}, token=globex_token).status_code == 204
    spec = env.claim("a1")  # ... acme's runner is
    job = spec["job_id"]
    # and cannot heartbeat, log or finish it, even knowing its id: the job does not exist for it
    beat = env.runner("POST", f"/jobs/{job}/heartbeat", json={"runner_id": "a1"}, token=globex_token)
    log = env.runner("PUT", f"/jobs/{job}/logs?offset=0", content=b"x", token=globex_token)
    done = env.runner("POST", f"/jobs/{job}/finish", json={"runner_id": "a1", "status": "errored"}, token=globex_token)
    assert (beat.status_code, log.status_code, done.status_code) == (404, 404, 404)
    assert env.run(spec["run_id"])["attributes"]["status"] == "planning"
    # another runner of the same organization cannot write the job's log or finish it either
    sibling = env.container.runner_credentials.runner_token("acme")
    assert env.runner("PUT", f"/jobs/{job}/logs?offset=0", content=b"x", token=sibling).status_code == 409
    finish = {"runner_id": "a1", "status": "errored"}
    assert env.runner("POST", f"/jobs/{job}/finish", json=finish, token=sibling).status_code == 409
    # a runner token is no API token either
    assert env.client.get(
        "/api/v2/organizations/acme", headers={"Authorization": f"Bearer {env.runner_token}"}
    ).status_code in (403, 404)
    # nor may a user (or organization) token ask for or touch jobs
    assert env.client.post("/api/runner/jobs/next", json={"runner_id": "u"}, headers=env.headers).status_code == 403
    user_beat = env.client.post(f"/api/runner/jobs/{job}/heartbeat", json={"runner_id": "a1"}, headers=env.headers)
    assert user_beat.status_code == 404


def test_revoked_and_expired_runner_tokens_are_refused() -> None:
    env = make_run_env()
    credential = env.container.runner_credentials.issue("acme")
    token = enrolled(env, credential)
    assert env.runner("POST", "/jobs/next", json={"runner_id": "r"}, token=token).status_code == 204
    env.container.accounts.revoke_token(credential.token_id)
    assert env.runner("POST", "/jobs/next", json={"runner_id": "r"}, token=token).status_code == 401
    expired = env.container.accounts.issue_token(
        PrincipalKind.RUNNER, RUNNER_TOKEN_SUBJECT, organization="acme", ttl_s=-1
    ).secret
    assert env.runner("POST", "/jobs/next", json={"runner_id": "r"}, token=expired).status_code == 401
    assert env.runner("POST", "/jobs/next", json={}, token=env.runner_token).status_code == 422


def test_next_hands_the_highest_lane_first_and_waits_out_the_back_off() -> None:
    table = MemoryTable()
    now = [1_000_000]
    queue = TableJobQueue(table, now_ms=lambda: now[0])
    job = {"run_id": "run-x", "phase": "plan", "attempt": 1}
    queue.enqueue("acme", "speculative", {**job, "job_id": "plan-spec"})
    queue.enqueue("acme", "plan", {**job, "job_id": "plan-later"}, delay_s=10)
    queue.enqueue("acme", "plan", {**job, "job_id": "plan-now"})
    queue.enqueue("acme", "apply", {**job, "job_id": "apply-delayed", "phase": "apply"}, delay_s=5)
    queue.enqueue("globex", "apply", {**job, "job_id": "apply-other", "phase": "apply"})
    assert [q.job_id for q in queue.queued("acme")] == ["apply-delayed", "plan-now", "plan-later", "plan-spec"]
    assert queue.take("acme").job_id == "plan-now"  # type: ignore[union-attr]
    assert queue.take("acme").job_id == "plan-spec"  # type: ignore[union-attr]
    assert queue.take("acme") is None  # the rest are backing off
    now[0] += 10_000
    assert [queue.take("acme").job_id for _ in range(2)] == ["apply-delayed", "plan-later"]  # type: ignore[union-attr]
    assert queue.take("acme") is None
    assert queue.take("globex").job_id == "apply-other"  # type: ignore[union-attr]


def test_two_concurrent_takers_never_get_the_same_job() -> None:
    queue = TableJobQueue(MemoryTable())
    for n in range(200):
        queue.enqueue("acme", "plan", {"job_id": f"plan-{n}", "run_id": "run-x", "phase": "plan"})
    taken: list[list[str]] = [[], [], [], []]
    start = threading.Barrier(4)

    def taker(mine: list[str]) -> None:
        start.wait()
        while (job := queue.take("acme")) is not None:
            mine.append(job.job_id)

    threads = [threading.Thread(target=taker, args=(mine,)) for mine in taken]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    every = [job for mine in taken for job in mine]
    assert len(every) == len(set(every)) == 200


def test_next_through_the_api_claims_once_for_concurrent_runners() -> None:
    env = make_run_env()
    env.create_run(env.upload_config())
    codes: list[int] = []
    lock = threading.Lock()

    def ask(n: int) -> None:
        code = env.runner("POST", "/jobs/next", json={"runner_id": f"r{n}"}).status_code
        with lock:
            codes.append(code)

    threads = [threading.Thread(target=ask, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(codes) == [200, 204, 204, 204]


def test_a_waiting_next_is_woken_by_an_enqueue_of_its_organization(monkeypatch: Any) -> None:
    """The long-poll sleeps on the job signal: one look before it waits, one after the enqueue woke it (no
    polling in between); an enqueue of another organization does not make it look."""
    env = make_run_env()
    globex_ws = _second_org(env)
    looks: list[str] = []
    take = env.queue.take
    monkeypatch.setattr(env.queue, "take", lambda org, lanes=(): (looks.append(org), take(org, lanes))[1])
    waiting = threading.Event()
    signal_wait = env.container.job_signal.wait

    def wait(organization: str, mark: int, timeout_s: float) -> bool:
        waiting.set()
        return signal_wait(organization, mark, timeout_s)

    monkeypatch.setattr(env.container.job_signal, "wait", wait)
    principal = env.container.accounts.authenticate(env.runner_token)
    got: list[Any] = []
    waiter = threading.Thread(target=lambda: got.append(env.container.jobs.next(principal, "r1", wait_s=300)))
    waiter.start()
    try:
        assert waiting.wait(60), "next never started waiting"
        env.create_run(env.upload_config(workspace_id=globex_ws), workspace_id=globex_ws)  # another organization
        env.create_run(env.upload_config())
        waiter.join(60)
        assert not waiter.is_alive(), "an enqueue did not wake the waiting next"
    finally:
        env.container.job_signal.notify("acme")  # never leave the thread behind, even when the test fails
        waiter.join(60)
    assert got[0] is not None and got[0].phase == "plan" and got[0].organization == "acme"
    assert looks == ["acme", "acme"]


def test_a_waiting_next_that_nothing_wakes_answers_none_at_its_deadline() -> None:
    env = make_run_env()
    principal = env.container.accounts.authenticate(env.runner_token)
    assert env.container.jobs.next(principal, "r1", wait_s=0.05) is None


def enrolled(env: RunEnv, credential: RunnerCredential) -> str:
    """What the runner `credential` starts does first: exchange its enrollment code for its token."""
    response = env.client.post("/api/runner/enroll", json={"code": credential.enrollment_code})
    assert response.status_code == 200, response.text
    assert response.json()["token_id"] == credential.token_id
    return str(response.json()["token"])


class FakeLauncher:
    binds_identity = False
    spot_lanes: tuple[str, ...] = ()

    def __init__(self, capacity: int = 100) -> None:
        self.runners: list[RunnerCredential] = []
        self.retired: list[tuple[str, int]] = []
        self.capacity = capacity

    def live(self) -> list[LiveRunner]:
        return [LiveRunner(c.organization, c.token_id, c.lanes) for c in self.runners]

    def launch(self, credentials: list[RunnerCredential]) -> dict[str, str | None]:
        started = credentials[: self.capacity - len(self.runners)]
        self.runners.extend(started)
        return {c.token_id: None for c in started}

    def retire(self, organization: str, count: int) -> int:
        self.retired.append((organization, count))
        return count


def _scaler_env(**settings: Any) -> tuple[RunEnv, str, FakeLauncher]:
    env = make_run_env(**settings)
    globex_ws = _second_org(env)
    launcher = FakeLauncher()
    env.container.launcher = env.container.scaler.launcher = launcher
    return env, globex_ws, launcher


def test_the_scaler_starts_runners_per_organization_with_their_own_tokens() -> None:
    env, globex_ws, launcher = _scaler_env(max_runners=4)
    env.create_run(env.upload_config())
    env.create_run(env.upload_config(speculative=True))
    env.create_run(env.upload_config(workspace_id=globex_ws), workspace_id=globex_ws)
    summary = env.container.scaler.scale_once()
    assert summary["demand"] == {"acme": 2, "globex": 1} and summary["started"] == {"acme": 2, "globex": 1}
    assert sorted(c.organization for c in launcher.runners) == ["acme", "acme", "globex"]
    assert len({c.enrollment_code for c in launcher.runners}) == 3
    tokens = {c.token_id: enrolled(env, c) for c in launcher.runners}
    for credential in launcher.runners:
        principal = env.container.accounts.authenticate(tokens[credential.token_id])
        assert principal.kind is PrincipalKind.RUNNER and principal.organization == credential.organization
    assert env.container.scaler.scale_once()["started"] == {}  # enough runners live
    # the globex runner gets globex's job, never acme's
    globex = next(c for c in launcher.runners if c.organization == "globex")
    spec = env.claim("g1", token=tokens[globex.token_id])
    assert spec["organization"] == "globex" and spec["workspace_id"] == globex_ws
    assert env.runner("POST", "/jobs/next", json={"runner_id": "g1"}, token=tokens[globex.token_id]).status_code == 204


def test_the_scaler_shares_the_maximum_and_retires_idle_organizations() -> None:
    env, globex_ws, launcher = _scaler_env(max_runners=2)
    for _ in range(3):
        ws = env.api(
            "POST", "/organizations/acme/workspaces", {"data": {"type": "workspaces", "attributes": {"name": f"w{_}"}}}
        ).json()["data"]["id"]
        env.create_run(env.upload_config(workspace_id=ws), workspace_id=ws)
    env.create_run(env.upload_config(workspace_id=globex_ws), workspace_id=globex_ws)
    assert env.container.scaler.scale_once()["started"] == {"acme": 1, "globex": 1}  # round-robin, not acme first
    # globex's run ends; acme still waits for room: globex's idle runner is asked to go
    globex_run = env.container.run_store.list_for_workspace(globex_ws)[0]
    env.container.scheduler.finish(globex_run, globex_run.version, "discarded")
    assert env.container.scaler.scale_once()["retired"] == 1
    assert launcher.retired == [("globex", 1)]


def test_the_scaler_revokes_the_tokens_of_runners_that_are_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    from terrace.services.runs import runner_credentials

    env, _, launcher = _scaler_env()
    env.create_run(env.upload_config())
    env.container.scaler.scale_once()
    (credential,) = launcher.runners
    token = enrolled(env, credential)
    monkeypatch.setattr(runner_credentials, "REVOKE_GRACE_S", -1)
    env.container.scaler.scale_once()  # still alive: kept
    assert env.runner("POST", "/jobs/next", json={"runner_id": "x"}, token=token).status_code == 200
    launcher.runners.clear()  # the task stopped
    env.container.scaler.scale_once()
    assert env.runner("POST", "/jobs/next", json={"runner_id": "x"}, token=token).status_code == 401


def test_a_runner_gone_during_its_wait_is_handed_no_job() -> None:
    """The woken long-poll of a runner whose connection closed (stopped, killed) claims nothing: the job stays
    queued for a live runner instead of waiting for a dead one's heartbeat deadline."""
    env = make_run_env()
    principal = env.container.accounts.authenticate(env.runner_token)
    waiting = threading.Event()
    got: list[Any] = []

    def gone() -> bool:
        return False

    signal = env.container.job_signal
    original_wait = signal.wait

    def wait(organization: str, mark: int, timeout_s: float) -> bool:
        waiting.set()
        return original_wait(organization, mark, timeout_s)

    signal.wait = wait  # type: ignore[method-assign]
    waiter = threading.Thread(target=lambda: got.append(env.container.jobs.next(principal, "r1", 300, gone)))
    waiter.start()
    try:
        assert waiting.wait(60)
        env.create_run(env.upload_config())
        waiter.join(60)
    finally:
        signal.notify("acme")
        waiter.join(60)
    assert got == [None]
    assert [job.phase for job in env.queued()] == ["plan"]  # still there for the next runner
    assert env.claim("r2")["phase"] == "plan"


def test_a_long_poll_over_http_is_answered_when_its_job_comes() -> None:
    env = make_run_env()
    answered: list[Any] = []
    waiter = threading.Thread(
        target=lambda: answered.append(env.runner("POST", "/jobs/next?wait=20", json={"runner_id": "r1"}))
    )
    waiter.start()
    deadline = time.monotonic() + 60
    while not env.container.job_signal._changed._waiters and time.monotonic() < deadline:  # noqa: SLF001
        time.sleep(0.01)  # until the request sleeps on the signal
    env.create_run(env.upload_config())
    waiter.join(60)
    assert answered and answered[0].status_code == 200 and answered[0].json()["phase"] == "plan"
