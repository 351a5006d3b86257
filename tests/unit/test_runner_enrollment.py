"""Runner enrollment codes instead of tokens in a runner's environment: the exchange through the runner API (the
runner's own client, `runner/enrollment.py`), a reused, expired or unknown code refused (a reuse also revokes the
token the code gave), a code bound to an ECS task refused to any other task and before its task is registered."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from run_helpers import RunEnv, make_run_env
from terrace.domain import clock
from terrace.domain.runner_enrollments import TTL_S
from terrace.runner.client import ApiError
from terrace.runner.enrollment import enroll, own_task_arn
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
    credential = env.container.scaler.credential("acme")
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
    credential = env.container.scaler.credential("acme")
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


def test_a_code_bound_to_a_task_is_refused_to_any_other() -> None:
    env, _, _ = _scaler_env()
    launcher = BindingLauncher()
    env.container.launcher = env.container.scaler.launcher = launcher
    env.create_run(env.upload_config())
    assert env.container.scaler.scale_once()["started"] == {"acme": 1}
    code = launcher.runners[0].enrollment_code
    assert exchange(env, code).status_code == 401  # no task named
    assert exchange(env, code, OTHER_TASK).status_code == 401  # another task
    metadata = httpx.MockTransport(lambda request: httpx.Response(200, json={"TaskARN": TASK, "Cluster": "terrace"}))
    arn = own_task_arn({"ECS_CONTAINER_METADATA_URI_V4": "http://169.254.170.2/v4/abc"}, transport=metadata)
    assert arn == TASK
    enrolled = enroll("https://terrace.test", code, arn, transport=through_app(env))
    assert env.claim("r", token=enrolled.token)["organization"] == "acme"


def test_a_code_whose_task_is_not_registered_yet_asks_to_retry() -> None:
    env = make_run_env()
    code, _ = env.container.runner_enrollments.create("runner-x", "acme", int(clock.epoch()) + 3600, bound=True)
    assert exchange(env, code, TASK).status_code == 409  # RunTask has not answered yet
    env.container.runner_enrollments.bind(code, TASK)
    assert exchange(env, code, TASK).status_code == 200


def test_outside_ecs_a_runner_names_no_task() -> None:
    assert own_task_arn({}) is None
