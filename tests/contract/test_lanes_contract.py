"""The lanes (`adapters/lanes.py: Lanes`) on SQS (moto), SQLite and memory: what is sent to a lane is received
from that lane only, hidden while a tick holds it, deleted or released by its receipt, delayed when asked, and
redriven to the lane's dead letters past its maximum receives."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import boto3
import pytest
from implementations import IMPLEMENTATIONS
from sampling_sqs import sampling_lanes
from terrace.adapters.definitions import LANE_PRIORITY, lane_queue
from terrace.adapters.lanes import LaneDelivery, LaneMessage, Lanes
from terrace.adapters.memory_lanes import MemoryLanes
from terrace.adapters.sqlite_lanes import SqliteLanes
from terrace.adapters.sqlite_table import SqliteDatabase
from terrace.adapters.sqs_lanes import SqsLanes

MAX_RECEIVES = 2
DEADLINE_S = 30.0


def _moto_lanes(endpoint: str) -> SqsLanes:
    sqs = boto3.client("sqs", endpoint_url=endpoint, region_name="us-east-1")
    prefix, urls = "l" + uuid.uuid4().hex[:8], {}
    for lane in LANE_PRIORITY:
        dead = sqs.create_queue(QueueName=f"{prefix}-{lane}-dlq")["QueueUrl"]
        dead_arn = sqs.get_queue_attributes(QueueUrl=dead, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        policy = json.dumps({"deadLetterTargetArn": dead_arn, "maxReceiveCount": str(MAX_RECEIVES)})
        attributes = {"VisibilityTimeout": "30", "RedrivePolicy": policy}
        urls[lane_queue(lane)] = sqs.create_queue(QueueName=f"{prefix}-{lane}", Attributes=attributes)["QueueUrl"]
        urls[lane_queue(lane) + "-dlq"] = dead
    return SqsLanes(sqs, urls)


@pytest.fixture(params=IMPLEMENTATIONS)
def lanes(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Lanes]:
    if request.param == "memory":
        yield MemoryLanes(max_receives=MAX_RECEIVES)
    elif request.param == "sqlite":
        database = SqliteDatabase(tmp_path / "terrace.db")
        yield SqliteLanes(database, max_receives=MAX_RECEIVES)
        database.close()
    else:
        yield _moto_lanes(request.getfixturevalue("moto_endpoint"))


def message(n: int, organization: str = "acme") -> LaneMessage:
    return LaneMessage(organization=organization, job_id=f"job-{n}", run_id=f"run-{n}", phase="plan", attempt=1)


def eventually(receive: Callable[[], list[LaneDelivery]], count: int = 1) -> list[LaneDelivery]:
    got: list[LaneDelivery] = []
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        got.extend(receive())
        if len(got) >= count:
            return got
        time.sleep(0.2)
    raise AssertionError(f"{len(got)} of {count} delivered before the deadline")


def test_a_message_travels_on_its_own_lane(lanes: Lanes) -> None:
    lanes.send("speculative", message(1))
    lanes.send("apply", message(2, "globex"))
    (apply,) = eventually(lambda: lanes.receive("apply", 10, hide_s=30))
    assert apply.message == message(2, "globex") and apply.lane == "apply" and apply.receive_count == 1
    assert lanes.receive("plan", 10, hide_s=30) == []
    (speculative,) = eventually(lambda: lanes.receive("speculative", 10, hide_s=30))
    assert speculative.message == message(1)
    assert lanes.receive("apply", 10, hide_s=30) == []  # hidden while a tick holds it
    lanes.delete(apply)
    lanes.release(speculative)
    (again,) = eventually(lambda: lanes.receive("speculative", 10, hide_s=30))
    assert again.message == message(1) and again.receive_count == 2 and again.receipt != speculative.receipt
    lanes.delete(again)
    assert lanes.receive("apply", 10, hide_s=0) == [] and lanes.receive("speculative", 10, hide_s=0) == []


def test_receive_takes_more_than_one_batch(lanes: Lanes) -> None:
    for n in range(13):
        lanes.send("plan", message(n))
    got = eventually(lambda: lanes.receive("plan", 20, hide_s=30), count=13)
    assert sorted(d.message.job_id for d in got) == sorted(f"job-{n}" for n in range(13))


def test_a_delayed_message_comes_later(lanes: Lanes) -> None:
    lanes.send("plan", message(3), delay_s=2)
    assert lanes.receive("plan", 10, hide_s=30) == []
    (got,) = eventually(lambda: lanes.receive("plan", 10, hide_s=30))
    assert got.message == message(3)


def test_an_unknown_lane_is_refused(lanes: Lanes) -> None:
    with pytest.raises(ValueError):
        lanes.send("urgent", message(4))


def test_a_message_received_too_often_goes_to_its_dead_letters(lanes: Lanes) -> None:
    lanes.send("apply", message(5))
    for count in range(1, MAX_RECEIVES + 1):
        (got,) = eventually(lambda: lanes.receive("apply", 10, hide_s=1))
        assert got.receive_count == count
    time.sleep(1.5)
    deadline = time.monotonic() + DEADLINE_S
    while lanes.dead_letters("apply") == [] and time.monotonic() < deadline:
        assert lanes.receive("apply", 10, hide_s=1) == []
        time.sleep(0.3)
    assert lanes.dead_letters("apply") == [message(5)] and lanes.dead_letters("plan") == []


def test_a_complete_receive_returns_every_waiting_message(lanes: Lanes) -> None:
    for n in range(3):
        lanes.send("plan", message(n))
    deadline = time.monotonic() + DEADLINE_S
    while (got := lanes.receive("plan", 10, hide_s=30, wait_s=1)) == [] and time.monotonic() < deadline:
        pass  # moto's first answer may come before its send is visible; a real long poll waits for it
    got += lanes.receive("plan", 10, hide_s=30, wait_s=1) if len(got) < 3 else []
    assert sorted(d.message.job_id for d in got) == ["job-0", "job-1", "job-2"]


@pytest.mark.parametrize("seed", range(4))
def test_on_sqs_a_short_poll_may_answer_empty_and_a_long_poll_does_not(seed: int) -> None:
    """SQS's short poll samples its servers (`sampling_sqs.py`): the lanes' quick receive may miss waiting
    messages, and `wait_s` asks every server."""
    sqs_lanes, client = sampling_lanes(seed)
    for n in range(3):
        sqs_lanes.send("apply", message(n))
    quick = sqs_lanes.receive("apply", 10, hide_s=0)
    complete = sqs_lanes.receive("apply", 10, hide_s=30, wait_s=2)
    assert len(quick) < 3 and len(complete) == 3
    assert client.waits[-2:] == [2, 2]  # every receive of a complete read is a long poll, the empty last one too
