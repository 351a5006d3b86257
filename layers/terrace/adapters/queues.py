"""Job lanes (SQS on AWS and locally on moto; a list in unit tests) and the events queue."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol

from terrace.adapters.definitions import LANE_PRIORITY

log = logging.getLogger("terrace.queues")


class JobQueue(Protocol):
    def send(self, lane: str, message: dict[str, Any], delay_s: int = 0) -> None: ...

    def depth(self) -> dict[str, int]:
        """Approximate number of visible + in-flight + delayed messages per lane."""
        ...


class EventPublisher(Protocol):
    def publish(self, event: dict[str, Any]) -> None: ...


class SqsJobQueue:
    def __init__(self, client: Any, lane_urls: dict[str, str]) -> None:
        self._client = client
        self._urls = lane_urls  # lane -> queue URL

    def send(self, lane: str, message: dict[str, Any], delay_s: int = 0) -> None:
        self._client.send_message(
            QueueUrl=self._urls[lane], MessageBody=json.dumps(message), DelaySeconds=max(0, min(900, delay_s))
        )

    def depth(self) -> dict[str, int]:
        names = [
            "ApproximateNumberOfMessages",
            "ApproximateNumberOfMessagesNotVisible",
            "ApproximateNumberOfMessagesDelayed",
        ]
        found: dict[str, int] = {}
        for lane in LANE_PRIORITY:
            attrs = self._client.get_queue_attributes(QueueUrl=self._urls[lane], AttributeNames=names)["Attributes"]
            found[lane] = sum(int(attrs.get(name, 0)) for name in names)
        return found


class SqsEventPublisher:
    def __init__(self, client: Any, queue_url: str) -> None:
        self._client = client
        self._url = queue_url

    def publish(self, event: dict[str, Any]) -> None:
        self._client.send_message(QueueUrl=self._url, MessageBody=json.dumps(event))


class KickingJobQueue:
    """A job queue that also wakes the scaler after each send (on AWS: an async Lambda invoke),
    so a runner starts within seconds instead of at the scaler's next scheduled tick."""

    def __init__(self, inner: JobQueue, kick: Callable[[], None]) -> None:
        self._inner = inner
        self._kick = kick

    def send(self, lane: str, message: dict[str, Any], delay_s: int = 0) -> None:
        self._inner.send(lane, message, delay_s)
        try:
            self._kick()
        except Exception:  # the scheduled tick still starts a runner
            log.exception("could not wake the scaler")

    def depth(self) -> dict[str, int]:
        return self._inner.depth()


class MemoryJobQueue:
    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any], int]] = []
        self._lock = threading.Lock()

    def send(self, lane: str, message: dict[str, Any], delay_s: int = 0) -> None:
        with self._lock:
            self.sent.append((lane, dict(message), delay_s))

    def depth(self) -> dict[str, int]:
        with self._lock:
            return {lane: sum(1 for sent_lane, _, _ in self.sent if sent_lane == lane) for lane in LANE_PRIORITY}

    def take(self) -> tuple[str, dict[str, Any]] | None:
        """Test helper: pop the highest-priority message, like a runner would."""
        with self._lock:
            for lane in LANE_PRIORITY:
                for index, (sent_lane, message, _) in enumerate(self.sent):
                    if sent_lane == lane:
                        del self.sent[index]
                        return lane, message
        return None


class MemoryEventPublisher:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def publish(self, event: dict[str, Any]) -> None:
        self.events.append(dict(event))
