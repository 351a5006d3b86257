"""The events queue (`events.EventQueue`) on SQS (moto locally): boto3's SQS client, with its dead-letter queue."""

from __future__ import annotations

import json
from typing import Any

from terrace.adapters.events import ReceivedEvent


class SqsEventPublisher:
    def __init__(self, client: Any, queue_url: str, dead_letter_url: str | None = None) -> None:
        self._client = client
        self._url = queue_url
        self._dead_letter_url = dead_letter_url  # the queue's redrive target, if it has one

    def publish(self, event: dict[str, Any], delay_s: int = 0) -> None:
        extra = {"DelaySeconds": delay_s} if delay_s else {}
        self._client.send_message(QueueUrl=self._url, MessageBody=json.dumps(event), **extra)

    def receive(self, max_events: int = 10, wait_s: float = 0, visibility_s: int | None = None) -> list[ReceivedEvent]:
        extra = {"VisibilityTimeout": visibility_s} if visibility_s is not None else {}
        response = self._client.receive_message(
            QueueUrl=self._url,
            MaxNumberOfMessages=max_events,
            WaitTimeSeconds=int(wait_s),
            AttributeNames=["ApproximateReceiveCount"],
            **extra,
        )
        return [
            ReceivedEvent(
                json.loads(m["Body"]),
                m["ReceiptHandle"],
                int(m.get("Attributes", {}).get("ApproximateReceiveCount", 1)),
            )
            for m in response.get("Messages", [])
        ]

    def ack(self, receipt: str) -> None:
        self._client.delete_message(QueueUrl=self._url, ReceiptHandle=receipt)

    def dead_letters(self) -> list[dict[str, Any]]:
        if not self._dead_letter_url:
            return []
        response = self._client.receive_message(
            QueueUrl=self._dead_letter_url, MaxNumberOfMessages=10, VisibilityTimeout=0
        )
        return [json.loads(m["Body"]) for m in response.get("Messages", [])]
