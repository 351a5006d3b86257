"""The events queue (`adapters/events.py: EventQueue`) on SQS (moto), SQLite and memory: at-least-once delivery,
visibility timeouts, receive counts, redrive to the dead letters after N receives, delayed delivery."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import boto3
import pytest
from implementations import IMPLEMENTATIONS
from terrace.adapters.events import EventQueue, ReceivedEvent
from terrace.adapters.memory_events import MemoryEventQueue
from terrace.adapters.sqlite_events import SqliteEventQueue
from terrace.adapters.sqlite_table import SqliteDatabase
from terrace.adapters.sqs_events import SqsEventPublisher

MAX_RECEIVES = 2
DEADLINE_S = 30.0


@pytest.fixture(params=IMPLEMENTATIONS)
def queue(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EventQueue]:
    if request.param == "memory":
        yield MemoryEventQueue(visibility_s=30, max_receives=MAX_RECEIVES)
    elif request.param == "sqlite":
        database = SqliteDatabase(tmp_path / "terrace.db")
        yield SqliteEventQueue(database, visibility_s=30, max_receives=MAX_RECEIVES)
        database.close()
    else:
        sqs = boto3.client("sqs", endpoint_url=request.getfixturevalue("moto_endpoint"), region_name="us-east-1")
        name = "q" + uuid.uuid4().hex[:8]
        dead = sqs.create_queue(QueueName=f"{name}-dead")["QueueUrl"]
        dead_arn = sqs.get_queue_attributes(QueueUrl=dead, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        policy = json.dumps({"deadLetterTargetArn": dead_arn, "maxReceiveCount": str(MAX_RECEIVES)})
        url = sqs.create_queue(QueueName=name, Attributes={"VisibilityTimeout": "30", "RedrivePolicy": policy})[
            "QueueUrl"
        ]
        yield SqsEventPublisher(sqs, url, dead_letter_url=dead)


def eventually(receive: Callable[[], list[ReceivedEvent]]) -> list[ReceivedEvent]:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        got = receive()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError("nothing was delivered before the deadline")


def test_publish_receive_ack(queue: EventQueue) -> None:
    queue.publish({"type": "run.status_changed", "n": 1})
    (got,) = eventually(lambda: queue.receive(10))
    assert got.body == {"type": "run.status_changed", "n": 1} and got.receive_count == 1
    assert queue.receive(10) == []  # invisible while being handled
    queue.ack(got.receipt)
    assert queue.receive(10, visibility_s=0) == []


def test_an_unacknowledged_event_comes_back_after_its_visibility_timeout(queue: EventQueue) -> None:
    queue.publish({"type": "t", "n": 2})
    (first,) = eventually(lambda: queue.receive(10, visibility_s=1))
    (again,) = eventually(lambda: queue.receive(10, visibility_s=30))
    assert again.body == first.body and again.receive_count == 2 and again.receipt != first.receipt
    queue.ack(again.receipt)
    assert queue.receive(10, visibility_s=0) == []


def test_redrive_to_the_dead_letters_after_max_receives(queue: EventQueue) -> None:
    queue.publish({"type": "poison"})
    for count in range(1, MAX_RECEIVES + 1):
        (got,) = eventually(lambda: queue.receive(10, visibility_s=1))
        assert got.receive_count == count  # handled and failed: never acknowledged
    time.sleep(1.5)
    deadline = time.monotonic() + DEADLINE_S
    while queue.dead_letters() == [] and time.monotonic() < deadline:
        assert queue.receive(10, visibility_s=1) == []  # the next receive moves it instead of delivering it
        time.sleep(0.3)
    assert queue.dead_letters() == [{"type": "poison"}]


def test_delayed_delivery(queue: EventQueue) -> None:
    queue.publish({"type": "later"}, delay_s=60)
    queue.publish({"type": "soon"}, delay_s=1)
    got = eventually(lambda: queue.receive(10))
    assert [e.body for e in got] == [{"type": "soon"}]
    assert queue.receive(10) == []  # "later" is still delayed
