"""The log sink port on CloudWatch Logs: one log group (`TERRACE_AUDIT_LOG_GROUP`), a stream per name, created on
first use. PutLogEvents' limits are kept: at most 10,000 events and 1 MiB (each event's bytes plus 26) a call, a
call's events within 24 hours of each other, a message at most 256 KiB (cut)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from terrace.adapters.log_sink import LogLine

BATCH_EVENTS = 10_000
BATCH_BYTES = 1_048_576
EVENT_OVERHEAD = 26
MESSAGE_MAX = 256 * 1024 - EVENT_OVERHEAD
SPAN_MS = 24 * 3600 * 1000 - 1


def batches(lines: Sequence[LogLine]) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    size = 0
    for at, message in lines:
        cut = message.encode()[:MESSAGE_MAX].decode(errors="ignore")
        event_size = len(cut.encode()) + EVENT_OVERHEAD
        if batch and (
            len(batch) >= BATCH_EVENTS or size + event_size > BATCH_BYTES or at - batch[0]["timestamp"] > SPAN_MS
        ):
            yield batch
            batch, size = [], 0
        batch.append({"timestamp": at, "message": cut})
        size += event_size
    if batch:
        yield batch


class CloudWatchLogSink:
    def __init__(self, client: Any, log_group: str) -> None:
        self._client, self._group = client, log_group
        self._streams: set[str] = set()

    def send(self, stream: str, lines: Sequence[LogLine]) -> None:
        if not lines:
            return
        if stream not in self._streams:
            try:
                self._client.create_log_stream(logGroupName=self._group, logStreamName=stream)
            except self._client.exceptions.ResourceAlreadyExistsException:
                pass
            self._streams.add(stream)
        for batch in batches(lines):
            self._client.put_log_events(logGroupName=self._group, logStreamName=stream, logEvents=batch)
