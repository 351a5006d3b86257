"""An SQS client with SQS's receive semantics, for the lanes (`adapters/sqs_lanes.py`): each message sits on one of
several servers; a short poll (`WaitTimeSeconds` 0) asks a random sample of them and may answer empty while
messages wait ("a particular receive request might not return all your messages", SQS's documentation on short
polling); a long poll asks every server. Seeded, so every run of a test draws the same answers. It records each
receive's wait, so a test can see which polls were long."""

from __future__ import annotations

import itertools
import random
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from terrace.adapters.definitions import LANE_PRIORITY, lane_queue
from terrace.adapters.sqs_lanes import SqsLanes


@dataclass
class _Message:
    body: str
    server: int
    visible_at: float
    receives: int = 0
    receipt: str = ""


@dataclass
class SamplingSqs:
    seed: int = 0
    servers: int = 4
    sampled: float = 0.25  # the chance a short poll asks a given server
    waits: list[int] = field(default_factory=list)  # each receive's WaitTimeSeconds

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)
        self._queues: dict[str, list[_Message]] = {}
        self._order = itertools.count()

    def urls(self, names: list[str]) -> dict[str, str]:
        return {name: f"https://sqs.test/{name}" for name in names}

    def send_message(self, QueueUrl: str, MessageBody: str, DelaySeconds: int = 0) -> dict[str, Any]:  # noqa: N803
        server = self._random.randrange(self.servers)
        self._queues.setdefault(QueueUrl, []).append(_Message(MessageBody, server, time.monotonic() + DelaySeconds))
        return {"MessageId": uuid.uuid4().hex}

    def receive_message(  # noqa: N803 -- boto3's keyword names
        self,
        QueueUrl: str,  # noqa: N803
        MaxNumberOfMessages: int = 1,  # noqa: N803
        WaitTimeSeconds: int = 0,  # noqa: N803
        VisibilityTimeout: int = 30,  # noqa: N803
        AttributeNames: list[str] | None = None,  # noqa: N803
    ) -> dict[str, Any]:
        self.waits.append(WaitTimeSeconds)
        asked = set(range(self.servers))
        if WaitTimeSeconds == 0:
            asked = {server for server in asked if self._random.random() < self.sampled}
        now, out = time.monotonic(), []
        for message in self._queues.get(QueueUrl, []):
            if len(out) >= min(MaxNumberOfMessages, 10):
                break
            if message.server in asked and message.visible_at <= now:
                message.receives += 1
                message.visible_at = now + VisibilityTimeout
                message.receipt = f"{next(self._order)}:{uuid.uuid4().hex}"
                attributes = {"ApproximateReceiveCount": str(message.receives)}
                out.append({"Body": message.body, "ReceiptHandle": message.receipt, "Attributes": attributes})
        return {"Messages": out} if out else {}

    def _find(self, url: str, receipt: str) -> _Message | None:
        return next((m for m in self._queues.get(url, []) if m.receipt == receipt), None)

    def delete_message(self, QueueUrl: str, ReceiptHandle: str) -> None:  # noqa: N803
        if (message := self._find(QueueUrl, ReceiptHandle)) is not None:
            self._queues[QueueUrl].remove(message)

    def change_message_visibility(self, QueueUrl: str, ReceiptHandle: str, VisibilityTimeout: int) -> None:  # noqa: N803
        if (message := self._find(QueueUrl, ReceiptHandle)) is not None:
            message.visible_at = time.monotonic() + VisibilityTimeout


def sampling_lanes(seed: int = 0) -> tuple[SqsLanes, SamplingSqs]:
    """The SQS lanes over a `SamplingSqs`, and that client."""
    client = SamplingSqs(seed)
    names = [lane_queue(lane) + suffix for lane in LANE_PRIORITY for suffix in ("", "-dlq")]
    return SqsLanes(client, client.urls(names)), client
