"""Runner enrollment codes instead of tokens in a runner's environment: the exchange through the runner API (the
runner's own client, `runner/enrollment.py`), a reused, expired or unknown code refused (a reuse also revokes the
token the code gave); an ECS task's enrollment never by its code, only by the task's proof of its identity
(`tests/integration/test_runner_identity_enrollment.py` proves it against STS on moto)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from run_helpers import RunEnv, make_run_env
from terrace.domain import clock
from terrace.domain.runner_enrollments import TTL_S
from terrace.runner.client import ApiError
from terrace.runner.enrollment import enroll, identity_proof, own_task_arn
from terrace.runner.sigv4 import Credentials
from terrace.services.access.runner_enrollment import RunnerEnrollments, RunnerIdentity
from test_runner_tenancy import FakeLauncher, _scaler_env

TASK = "arn:aws:ecs:us-east-1:123456789012:task/terrace/0123456789abcdef"
OTHER_TASK = "arn:aws:ecs:us-east-1:123456789012:task/terrace/fedcba9876543210"


def through_app(env: RunEnv) -> httpx.MockTransport:
    """The runner's HTTP client, answered by the app (as the API behind CloudFront would)."""

    def handle(request: httpx.Request) -> httpx.Response:
        answer = env.client.request(request.method, request.url.path, content=request.content, headers=request.headers)
        return httpx.Response(answer.status_code, content=answer.content, headers=answer.headers)

    return httpx.MockTransport(handle)


def exchange(env: RunEnv, code: str, task_arn: str | None = None) -> Any:
    return env.client.post("/api/runner/enroll", json={"code": code, "task_arn": task_arn})


def next_job(env: RunEnv, token: str) -> int:
    return int(env.runner("POST", "/jobs/next", json={"runner_id": "r"}, token=token).status_code)


def test_the_runner_exchanges_its_code_for_its_token_once() -> None:
    env = make_run_env()
    credential = env.container.runner_credentials.issue("acme")
    enrolled = enroll("https://terrace.test", credential.enrollment_code, None, transport=through_app(env))
    assert (enrolled.organization, enrolled.runner_id, enrolled.token_id) == (
        "acme",
        credential.runner_id,
        credential.token_id,
    )
    assert next_job(env, enrolled.token) == 204  # a runner token of acme
    with pytest.raises(ApiError) as refused:  # the same code again: refused ...
        enroll("https://terrace.test", credential.enrollment_code, None, transport=through_app(env))
    assert refused.value.status == 401
    assert next_job(env, enrolled.token) == 401  # ... and the token it gave is revoked: someone else had the code


def test_an_expired_or_unknown_code_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    env = make_run_env()
    credential = env.container.runner_credentials.issue("acme")
    now = clock.epoch()
    monkeypatch.setattr(clock, "epoch", lambda: now + TTL_S + 1)
    expired = exchange(env, credential.enrollment_code)
    unknown = exchange(env, "tre.not-a-code")
    assert (expired.status_code, unknown.status_code) == (401, 401)
    assert expired.json()["errors"][0]["detail"] == unknown.json()["errors"][0]["detail"]  # the same answer
    assert "token" not in expired.text


def test_a_malformed_enrollment_is_a_4xx() -> None:
    env = make_run_env()
    assert env.client.post("/api/runner/enroll", json={}).status_code == 422
    assert env.client.post("/api/runner/enroll", json={"code": "x" * 500}).status_code == 422


class BindingLauncher(FakeLauncher):
    """An ECS-like launcher: it names each runner it starts by its task ARN."""

    binds_identity = True

    def launch(self, credentials: Any) -> dict[str, str | None]:
        return dict.fromkeys(super().launch(credentials), TASK)


class FakeSts:
    """STS as the API sees it: answers whose session signed (here: whatever the test says)."""

    url = "https://sts.us-east-1.amazonaws.com/"

    def __init__(self, arn: str) -> None:
        self.arn, self.asked = arn, 0

    def caller_arn(self, headers: Any, body: str) -> str | None:
        self.asked += 1
        return self.arn


ROLE = "arn:aws:iam::123456789012:role/terrace-runner"


def proving(env: RunEnv, session: str) -> FakeSts:
    sts = FakeSts(f"arn:aws:sts::123456789012:assumed-role/terrace-runner/{session}")
    identity = RunnerIdentity(sts, "https://terrace.test", ROLE)
    env.container.__dict__["runner_enrollments"] = RunnerEnrollments(
        env.container.access_store.sign_in, env.container.accounts, identity=identity
    )
    return sts


def proof() -> dict[str, Any]:
    credentials = Credentials("ASIAEXAMPLE", "secret", "token")
    return identity_proof("https://terrace.test", FakeSts.url, "us-east-1", credentials).model_dump()


def test_a_code_bound_to_a_task_enrolls_nobody_not_even_that_task() -> None:
    env, _, _ = _scaler_env()
    launcher = BindingLauncher()
    env.container.launcher = env.container.scaler.launcher = launcher
    env.create_run(env.upload_config())
    assert env.container.scaler.scale_once()["started"] == {"acme": 1}
    code = launcher.runners[0].enrollment_code
    assert exchange(env, code).status_code == 401  # the code alone (what DescribeTasks showed before)
    assert exchange(env, code, TASK).status_code == 401  # with the task's ARN (DescribeTasks showed both)
    metadata = httpx.MockTransport(lambda request: httpx.Response(200, json={"TaskARN": TASK, "Cluster": "terrace"}))
    arn = own_task_arn({"ECS_CONTAINER_METADATA_URI_V4": "http://169.254.170.2/v4/abc"}, transport=metadata)
    assert arn == TASK


def test_a_task_proves_who_it_is_and_waits_for_its_registration() -> None:
    env = make_run_env()
    sts = proving(env, TASK.rsplit("/", 1)[1])
    enrollments = env.container.runner_enrollments
    code, _ = enrollments.create("runner-x", "acme", int(clock.epoch()) + 3600, bound=True)
    body = {"task_arn": TASK, "identity": proof()}
    assert env.client.post("/api/runner/enroll", json=body).status_code == 409  # RunTask has not answered yet
    assert sts.asked == 0  # nothing is sent to STS for a task not registered
    enrollments.bind(code, TASK)
    assert env.client.post("/api/runner/enroll", json={**body, "task_arn": OTHER_TASK}).status_code == 409
    answer = env.client.post("/api/runner/enroll", json=body)
    assert answer.status_code == 200 and next_job(env, answer.json()["token"]) == 204


def test_a_proof_of_another_tasks_session_is_refused() -> None:
    env = make_run_env()
    proving(env, OTHER_TASK.rsplit("/", 1)[1])  # STS says: the runner role's session of another task
    enrollments = env.container.runner_enrollments
    code, _ = enrollments.create("runner-x", "acme", int(clock.epoch()) + 3600, bound=True)
    enrollments.bind(code, TASK)
    assert env.client.post("/api/runner/enroll", json={"task_arn": TASK, "identity": proof()}).status_code == 401


def test_a_server_without_a_runner_role_enrolls_no_task() -> None:
    env = make_run_env()  # the embedded server, the unit tests: local runners only
    enrollments = env.container.runner_enrollments
    code, _ = enrollments.create("runner-x", "acme", int(clock.epoch()) + 3600, bound=True)
    enrollments.bind(code, TASK)
    assert env.client.post("/api/runner/enroll", json={"task_arn": TASK, "identity": proof()}).status_code == 401


def test_outside_ecs_a_runner_names_no_task() -> None:
    assert own_task_arn({}) is None
