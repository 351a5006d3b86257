"""Receives job messages from the SQS lanes, highest priority first (apply ▸ plan ▸ speculative)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from terrace.domain.jobs import JobMessage

log = logging.getLogger("terrace.runner.lanes")
PRIORITY = ("apply", "plan", "speculative")


@dataclass(frozen=True)
class ReceivedJob:
    lane: str
    queue_url: str
    receipt_handle: str
    message: JobMessage


class Lanes:
    """The job lanes. `sqs` is a boto3 SQS client; `queue_urls` maps lane -> URL."""

    def __init__(
        self,
        sqs: Any,
        queue_urls: dict[str, str],
        long_poll_s: int = 1,
        poll_interval_s: float = 0.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._sqs = sqs
        self._lanes = [(lane, queue_urls[lane]) for lane in PRIORITY if queue_urls.get(lane)]
        if not self._lanes:
            raise ValueError("no lane queue URLs configured")
        self._long_poll_s = long_poll_s
        self._poll_interval_s = poll_interval_s
        self._sleep = sleep

    def receive(self) -> ReceivedJob | None:
        """One sweep: a short receive on each lane in order; then, when all are empty, either a pause of
        `poll_interval_s` (fast pick-up of any lane) or a brief long-poll on the highest lane (fewer requests)."""
        for lane, url in self._lanes:
            job = self._receive_one(lane, url, wait_s=0)
            if job is not None:
                return job
        if self._poll_interval_s > 0:
            self._sleep(self._poll_interval_s)
            return None
        lane, url = self._lanes[0]
        return self._receive_one(lane, url, wait_s=self._long_poll_s)

    def _receive_one(self, lane: str, url: str, wait_s: int) -> ReceivedJob | None:
        while True:
            reply = self._sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1, WaitTimeSeconds=wait_s)
            messages = reply.get("Messages") or []
            if not messages:
                return None
            raw = messages[0]
            try:
                message = JobMessage.model_validate_json(raw.get("Body") or "")
            except ValidationError as exc:
                log.warning("dropping a malformed job message on lane %s: %s", lane, exc.errors()[:1])
                self._sqs.delete_message(QueueUrl=url, ReceiptHandle=raw["ReceiptHandle"])
                wait_s = 0
                continue
            return ReceivedJob(lane=lane, queue_url=url, receipt_handle=raw["ReceiptHandle"], message=message)

    def extend(self, job: ReceivedJob, visibility_s: int) -> None:
        try:
            self._sqs.change_message_visibility(
                QueueUrl=job.queue_url, ReceiptHandle=job.receipt_handle, VisibilityTimeout=visibility_s
            )
        except Exception as exc:  # the API's heartbeat is what counts; a lost extension only risks a redelivery
            log.warning("could not extend the visibility of job %s: %s", job.message.job_id, exc)

    def delete(self, job: ReceivedJob) -> None:
        try:
            self._sqs.delete_message(QueueUrl=job.queue_url, ReceiptHandle=job.receipt_handle)
        except Exception as exc:
            log.warning("could not delete the message of job %s: %s", job.message.job_id, exc)
