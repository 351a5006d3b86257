"""The lanes (`lanes.Lanes`) on SQS (moto locally): one queue per lane, each with its dead-letter queue
(`definitions.LANE_QUEUES`); release is `ChangeMessageVisibility` to 0.

A short poll (`wait_s` 0) asks a sample of SQS's servers and may answer empty while messages wait, so an empty
short answer proves nothing; with `wait_s` every receive is a long poll, which asks them all."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from terrace.adapters.definitions import LANE_PRIORITY, lane_queue
from terrace.adapters.lanes import MAX_DELAY_S, LaneDelivery, LaneMessage, check_lane

SQS_BATCH = 10  # ReceiveMessage's maximum
MAX_WAIT_S = 20  # ReceiveMessage's longest wait


class SqsLanes:
    """`queue_urls`: logical queue name (`definitions.lane_queue(lane)` and its `-dlq`) -> URL."""

    def __init__(self, client: Any, queue_urls: Mapping[str, str]) -> None:
        self._client = client
        self._urls = dict(queue_urls)

    def _url(self, lane: str, dead: bool = False) -> str:
        check_lane(lane, LANE_PRIORITY)
        return self._urls[lane_queue(lane) + ("-dlq" if dead else "")]

    def send(self, lane: str, message: LaneMessage, delay_s: int = 0) -> None:
        delay = min(max(0, delay_s), MAX_DELAY_S)
        extra = {"DelaySeconds": delay} if delay else {}
        self._client.send_message(QueueUrl=self._url(lane), MessageBody=json.dumps(message.body()), **extra)

    def receive(self, lane: str, max_messages: int, hide_s: int, wait_s: int = 0) -> list[LaneDelivery]:
        url, received = self._url(lane), list[LaneDelivery]()
        while len(received) < max_messages:
            response = self._client.receive_message(
                QueueUrl=url,
                MaxNumberOfMessages=min(SQS_BATCH, max_messages - len(received)),
                WaitTimeSeconds=min(max(0, wait_s), MAX_WAIT_S),
                VisibilityTimeout=hide_s,
                AttributeNames=["ApproximateReceiveCount"],
            )
            batch = response.get("Messages", [])
            for m in batch:
                count = int(m.get("Attributes", {}).get("ApproximateReceiveCount", 1))
                received.append(
                    LaneDelivery(lane, LaneMessage.from_body(json.loads(m["Body"])), m["ReceiptHandle"], count)
                )
            if not batch:
                break
        return received

    def delete(self, delivery: LaneDelivery) -> None:
        self._client.delete_message(QueueUrl=self._url(delivery.lane), ReceiptHandle=delivery.receipt)

    def release(self, delivery: LaneDelivery) -> None:
        self._client.change_message_visibility(
            QueueUrl=self._url(delivery.lane), ReceiptHandle=delivery.receipt, VisibilityTimeout=0
        )

    def dead_letters(self, lane: str) -> list[LaneMessage]:
        response = self._client.receive_message(
            QueueUrl=self._url(lane, dead=True), MaxNumberOfMessages=10, VisibilityTimeout=0
        )
        return [LaneMessage.from_body(json.loads(m["Body"])) for m in response.get("Messages", [])]
