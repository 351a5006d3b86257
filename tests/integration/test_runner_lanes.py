"""Lane priority and message handling against moto SQS."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from runner_fakes import FakeApi, fake_terraform, make_spec, runner_config, tarball  # noqa: E402
from terrace.domain.jobs import JobMessage  # noqa: E402
from terrace.runner.execution import JobExecutor  # noqa: E402
from terrace.runner.lanes import Lanes  # noqa: E402
from terrace.runner.main import Runner  # noqa: E402


@pytest.fixture()
def sqs() -> Iterator[tuple[Any, dict[str, str]]]:
    with mock_aws():
        client = boto3.client("sqs", region_name="us-east-1")
        urls = {
            lane: client.create_queue(QueueName=f"t-jobs-{lane}", Attributes={"VisibilityTimeout": "60"})["QueueUrl"]
            for lane in ("apply", "plan", "speculative")
        }
        yield client, urls


def send(client: Any, url: str, job_id: str, phase: str = "plan") -> None:
    client.send_message(
        QueueUrl=url, MessageBody=JobMessage(job_id=job_id, run_id="run-1", phase=phase).model_dump_json()
    )  # type: ignore[arg-type]


def depth(client: Any, url: str) -> int:
    attrs = client.get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    return int(attrs["ApproximateNumberOfMessages"]) + int(attrs["ApproximateNumberOfMessagesNotVisible"])


def test_lanes_are_drained_in_priority_order(sqs: tuple[Any, dict[str, str]]) -> None:
    client, urls = sqs
    send(client, urls["speculative"], "plan-spec")
    send(client, urls["plan"], "plan-1")
    send(client, urls["apply"], "apply-1", "apply")  # enqueued last, taken first
    lanes = Lanes(client, urls, long_poll_s=0)
    taken = []
    for _ in range(3):
        job = lanes.receive()
        assert job is not None
        taken.append((job.lane, job.message.job_id))
        lanes.delete(job)
    assert taken == [("apply", "apply-1"), ("plan", "plan-1"), ("speculative", "plan-spec")]
    assert lanes.receive() is None


def test_a_later_apply_overtakes_waiting_plans(sqs: tuple[Any, dict[str, str]]) -> None:
    client, urls = sqs
    send(client, urls["plan"], "plan-1")
    send(client, urls["plan"], "plan-2")
    lanes = Lanes(client, urls, long_poll_s=0)
    first = lanes.receive()
    assert first is not None and first.lane == "plan"
    send(client, urls["apply"], "apply-9", "apply")
    second = lanes.receive()
    assert second is not None and second.message.job_id == "apply-9"


def test_malformed_messages_are_deleted(sqs: tuple[Any, dict[str, str]]) -> None:
    client, urls = sqs
    client.send_message(QueueUrl=urls["apply"], MessageBody="{not json")
    client.send_message(QueueUrl=urls["apply"], MessageBody='{"job_id": "x"}')
    send(client, urls["plan"], "plan-ok")
    job = Lanes(client, urls, long_poll_s=0).receive()
    assert job is not None and job.message.job_id == "plan-ok"
    assert depth(client, urls["apply"]) == 0


def test_extend_visibility(sqs: tuple[Any, dict[str, str]]) -> None:
    client, urls = sqs
    send(client, urls["plan"], "plan-1")
    lanes = Lanes(client, urls, long_poll_s=0)
    job = lanes.receive()
    assert job is not None
    lanes.extend(job, 0)  # visible again at once
    again = lanes.receive()
    assert again is not None and again.message.job_id == "plan-1"


def test_runner_runs_a_job_and_deletes_its_message(sqs: tuple[Any, dict[str, str]], tmp_path: Path) -> None:
    client, urls = sqs
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": ""})})
    spec = make_spec("plan")
    fake.specs[spec.job_id] = spec
    send(client, urls["plan"], spec.job_id)
    api, transfers = fake.clients()
    config = runner_config(tmp_path, fake_terraform(tmp_path / "bin"), idle_exit_s=0.5)
    runner = Runner(
        config, Lanes(client, urls, long_poll_s=0), api, JobExecutor(config, api, transfers, echo_to=io.StringIO())
    )
    assert runner.loop(once=True) == 0
    assert fake.finished[spec.job_id].status == "finished"
    assert depth(client, urls["plan"]) == 0
    assert runner.loop() == 0  # nothing left: exits after the idle time


def test_an_unclaimable_job_is_dropped(sqs: tuple[Any, dict[str, str]], tmp_path: Path) -> None:
    client, urls = sqs
    fake = FakeApi(claimable=False)
    send(client, urls["apply"], "apply-gone", "apply")
    api, transfers = fake.clients()
    config = runner_config(tmp_path, fake_terraform(tmp_path / "bin"), idle_exit_s=0.3)
    runner = Runner(config, Lanes(client, urls, long_poll_s=0), api, JobExecutor(config, api, transfers))
    assert runner.loop(once=True) == 0
    assert not fake.finished and depth(client, urls["apply"]) == 0


def test_a_refused_runner_secret_stops_the_runner_and_keeps_the_message(
    sqs: tuple[Any, dict[str, str]], tmp_path: Path
) -> None:
    client, urls = sqs
    fake = FakeApi()
    send(client, urls["plan"], "plan-1")
    api, transfers = fake.clients()
    api._secret = lambda: "wrong-secret"
    config = runner_config(tmp_path, fake_terraform(tmp_path / "bin"), idle_exit_s=5)
    runner = Runner(config, Lanes(client, urls, long_poll_s=0), api, JobExecutor(config, api, transfers))
    assert runner.loop() == 3
    assert depth(client, urls["plan"]) == 1


def test_empty_lanes_pause_for_the_poll_interval_instead_of_long_polling(sqs: tuple[Any, dict[str, str]]) -> None:
    client, urls = sqs
    pauses: list[float] = []
    lanes = Lanes(client, urls, poll_interval_s=0.25, sleep=pauses.append)
    assert lanes.receive() is None and pauses == [0.25]
    send(client, urls["speculative"], "plan-spec")
    job = lanes.receive()
    assert job is not None and job.lane == "speculative" and pauses == [0.25]
