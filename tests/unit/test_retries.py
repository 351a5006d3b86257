"""The retries of calls that fail for a while (tenacity, not hand-written loops): each keeps its number of tries,
its back-off and what it retries, and takes its `sleep` from its maker, so these tests wait for nothing and read
the waits it would have slept. The optimistic-concurrency loops are `services/optimistic.py`'s (test_optimistic.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from botocore.exceptions import ClientError
from terrace.adapters import dynamo_table
from terrace.adapters.dynamo_table import DynamoTable
from terrace.adapters.ecs_runner_launcher import FARGATE, FARGATE_SPOT, RUN_TASK_ATTEMPTS, EcsLauncher
from terrace.adapters.runner_launcher import RunnerCredential
from terrace.migrate.client import RATE_LIMITED_ATTEMPTS, Api
from terrace.runner.client import ApiError, Transfers, with_retries

ARN = "arn:aws:ecs:us-east-1:123456789012:task/terrace/abc"


# DynamoDB ----------------------------------------------------------------------------------------------------------
class Dynamo:
    """Puts refused for a conflict `conflicts` times; batch writes leaving `unprocessed` answers unprocessed."""

    def __init__(self, conflicts: int = 0, unprocessed: int = 0) -> None:
        self.conflicts, self.unprocessed, self.calls = conflicts, unprocessed, 0

    def put_item(self, **_: Any) -> dict[str, Any]:
        self.calls += 1
        if self.conflicts:
            self.conflicts -= 1
            body: Any = {"Error": {"Code": "TransactionConflictException", "Message": "m"}}
            raise ClientError(body, "PutItem")
        return {}

    def batch_write_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:  # noqa: N803 - boto3's name
        self.calls += 1
        if self.unprocessed:
            self.unprocessed -= 1
            return {"UnprocessedItems": RequestItems}
        return {}


def test_a_conflicting_write_backs_off_with_jitter_then_lands() -> None:
    slept: list[float] = []
    client = Dynamo(conflicts=dynamo_table.CONFLICT_ATTEMPTS - 1)
    DynamoTable(client, "t", sleep=slept.append).put({"pk": "a", "sk": "b"})
    assert client.calls == dynamo_table.CONFLICT_ATTEMPTS
    assert len(slept) == dynamo_table.CONFLICT_ATTEMPTS - 1
    for n, wait in enumerate(slept):
        assert 0.5 <= wait / (dynamo_table.CONFLICT_BACKOFF_S * 2**n) < 1.5


def test_a_lasting_conflict_goes_up_after_its_tries() -> None:
    slept: list[float] = []
    client = Dynamo(conflicts=dynamo_table.CONFLICT_ATTEMPTS)
    with pytest.raises(ClientError):
        DynamoTable(client, "t", sleep=slept.append).put({"pk": "a", "sk": "b"})
    assert client.calls == dynamo_table.CONFLICT_ATTEMPTS and len(slept) == dynamo_table.CONFLICT_ATTEMPTS - 1


def test_unprocessed_batch_writes_are_sent_again_with_exponential_back_off() -> None:
    slept: list[float] = []
    client = Dynamo(unprocessed=3)
    DynamoTable(client, "t", sleep=slept.append).batch_put([{"pk": "a", "sk": "b"}])
    assert client.calls == 4 and slept == [0.05, 0.1, 0.2]


def test_batch_writes_left_unprocessed_after_every_try_are_an_error() -> None:
    slept: list[float] = []
    client = Dynamo(unprocessed=dynamo_table.BATCH_WRITE_ATTEMPTS)
    with pytest.raises(RuntimeError, match="unprocessed"):
        DynamoTable(client, "t", sleep=slept.append).batch_put([{"pk": "a", "sk": "b"}])
    assert client.calls == dynamo_table.BATCH_WRITE_ATTEMPTS
    assert slept == [min(2.0, 0.05 * 2**n) for n in range(dynamo_table.BATCH_WRITE_ATTEMPTS - 1)]


# ECS RunTask -------------------------------------------------------------------------------------------------------
class Ecs:
    def __init__(self, replies: list[Any]) -> None:
        self.replies, self.capacities = list(replies), []

    def run_task(self, **kwargs: Any) -> dict[str, Any]:
        self.capacities.append(kwargs["capacityProviderStrategy"][0]["capacityProvider"])
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return dict(reply)


def _launcher(ecs: Ecs, slept: list[float], spot: bool = False) -> EcsLauncher:
    lanes = ("speculative",) if spot else ()
    return EcsLauncher(
        ecs, "cluster", "taskdef", ["subnet"], ["sg"], False, "runner", spot_lanes=lanes, sleep=slept.append
    )


def test_run_task_backs_off_linearly_and_counts_a_launch_failing_every_try() -> None:
    slept: list[float] = []
    ecs = Ecs([RuntimeError("throttled")] * RUN_TASK_ATTEMPTS)
    launcher = _launcher(ecs, slept)
    assert launcher.launch([RunnerCredential("runner-1", "acme", "at-1", "tre.code", 1234)]) == {}
    assert len(ecs.capacities) == RUN_TASK_ATTEMPTS and launcher.failures == 1
    assert slept == [0.5 * n for n in range(1, RUN_TASK_ATTEMPTS)]


def test_a_spot_launch_that_fails_goes_to_fargate_without_a_back_off() -> None:
    slept: list[float] = []
    ecs = Ecs([{"tasks": [], "failures": [{"reason": "RESOURCE:CAPACITY"}]}, {"tasks": [{"taskArn": ARN}]}])
    launcher = _launcher(ecs, slept, spot=True)
    credential = RunnerCredential("runner-1", "acme", "at-1", "tre.code", 1234, lanes=("speculative",))
    assert launcher.launch([credential]) == {"at-1": ARN}
    assert ecs.capacities == [FARGATE_SPOT, FARGATE] and slept == [0.0] and launcher.spot_fallbacks == 1


# terrace migrate: 429s ---------------------------------------------------------------------------------------------
def _limited(times: int, headers: dict[str, str]) -> tuple[httpx.MockTransport, list[str]]:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        if len(seen) <= times:
            return httpx.Response(429, headers=headers)
        return httpx.Response(200, json={"data": []})

    return httpx.MockTransport(handler), seen


def test_migrate_waits_what_a_429_asks_then_goes_on() -> None:
    slept: list[float] = []
    transport, seen = _limited(2, {"Retry-After": "7"})
    api = Api("source", "https://tfc.test", "t", transport=transport, sleep=slept.append)
    assert api.request("GET", "/organizations") == {"data": []}
    assert len(seen) == 3 and slept == [7.0, 7.0]


def test_migrate_gives_a_lasting_429_up_after_its_tries_and_caps_each_wait() -> None:
    slept: list[float] = []
    transport, seen = _limited(10**6, {"X-RateLimit-Reset": "90"})
    api = Api("source", "https://tfc.test", "t", transport=transport, sleep=slept.append)
    with pytest.raises(Exception, match="429"):
        api.request("GET", "/organizations")
    assert len(seen) == RATE_LIMITED_ATTEMPTS and slept == [30.0] * (RATE_LIMITED_ATTEMPTS - 1)


def test_a_migrate_download_waits_out_a_429() -> None:
    slept: list[float] = []
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return (
            httpx.Response(429, headers={"Retry-After": "3"}) if len(calls) == 1 else httpx.Response(200, content=b"s")
        )

    api = Api("source", "https://tfc.test", "t", transport=httpx.MockTransport(handler), sleep=slept.append)
    assert api.download("https://tfc.test/state") == b"s"
    assert slept == [3.0]


# the runner's HTTP clients -----------------------------------------------------------------------------------------
def test_runner_calls_retry_connection_errors_and_5xx_after_each_delay() -> None:
    slept: list[float] = []
    answers: list[Any] = [httpx.ConnectError("refused"), httpx.Response(503), httpx.Response(200)]

    def call() -> httpx.Response:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert with_retries(call, "next job", (1.0, 2.0, 4.0), sleep=slept.append).status_code == 200
    assert slept == [1.0, 2.0]


def test_runner_calls_give_the_last_answer_or_error_when_tries_run_out() -> None:
    slept: list[float] = []
    assert with_retries(lambda: httpx.Response(502), "x", (1.0, 2.0), sleep=slept.append).status_code == 502
    assert slept == [1.0, 2.0]

    def refused() -> httpx.Response:
        raise httpx.ConnectError("refused")

    with pytest.raises(httpx.ConnectError):
        with_retries(refused, "x", (1.0,), sleep=slept.append)
    assert slept == [1.0, 2.0, 1.0]


def test_a_runner_download_retries_5xx_and_resets_then_refuses_a_4xx(tmp_path: Path) -> None:
    slept: list[float] = []
    answers: list[Any] = [httpx.Response(500), httpx.ReadError("reset"), httpx.Response(200, content=b"tar")]

    def handler(request: httpx.Request) -> httpx.Response:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    transfers = Transfers(transport=httpx.MockTransport(handler), retry_delays=(0.5, 1.5, 9.0), sleep=slept.append)
    assert transfers.download("https://s3.test/c", tmp_path / "c", 10, "configuration") == 3
    assert slept == [0.5, 1.5]
    answers[:] = [httpx.Response(500), httpx.Response(500)]
    with pytest.raises(ApiError, match="HTTP 500"):
        Transfers(transport=httpx.MockTransport(handler), retry_delays=(0.5,), sleep=slept.append).download(
            "https://s3.test/c", tmp_path / "d", 10, "configuration"
        )
    answers[:] = [httpx.Response(404)]
    with pytest.raises(ApiError, match="HTTP 404"):
        transfers.download("https://s3.test/c", tmp_path / "e", 10, "configuration")
    assert slept == [0.5, 1.5, 0.5]
