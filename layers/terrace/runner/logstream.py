"""Streams a job's log to the API in ordered chunks (one request in flight, bounded memory)."""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TextIO

from terrace.domain.masking import Masker, StreamMasker

log = logging.getLogger("terrace.runner.logs")
FLUSH_BYTES = 64 * 1024
# Each PUT is an API request (on AWS a CloudFront, HTTP API and Lambda request and a DynamoDB write): bytes that follow
# a PUT wait until FLUSH_S after it, so steady output goes out every FLUSH_S (the CLI reads a running log about every
# 1-2 s anyway); the first bytes after a quiet spell wait only GATHER_S for the rest of their burst.
FLUSH_S = 2.0
GATHER_S = 0.1
MAX_REQUEST_BYTES = 1024 * 1024
MAX_BUFFER_BYTES = 8 * 1024 * 1024
MAX_ECHO_LINE = 8 * 1024


@dataclass(frozen=True)
class FlushSchedule:
    """When pending log bytes go out: `gather_s` after the first of them, but not before `flush_s` after the
    previous PUT started (a burst after a quiet spell at once, steady output in one PUT a `flush_s`)."""

    flush_s: float = FLUSH_S
    gather_s: float = GATHER_S

    def due(self, first_pending_at: float, last_sent_at: float | None) -> float:
        gathered = first_pending_at + self.gather_s
        return gathered if last_sent_at is None else max(gathered, last_sent_at + self.flush_s)


class LogStream:
    """`write()` appends bytes; a sender thread PUTs them at contiguous offsets as `FlushSchedule` says (at once
    when `flush_bytes` are pending).

    Writers block while the buffer is full, so a slow API slows the child instead of growing memory.
    If the API keeps failing, the stream stops sending (the job still finishes) and drops further bytes.
    Every `redact` string (in the forms terraform prints it) is masked before anything leaves: the chunks
    sent to the API, and each complete line echoed to `echo_to` (stdout, CloudWatch) as a JSON log line.
    A secret split across writes is still masked: up to its length - 1 bytes wait for the next write.
    """

    def __init__(
        self,
        send: Callable[[int, bytes], None],
        *,
        job_id: str,
        redact: Iterable[str] = (),
        echo_to: TextIO | None = None,
        flush_s: float = FLUSH_S,
        flush_bytes: int = FLUSH_BYTES,
        max_buffer: int = MAX_BUFFER_BYTES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._send = send
        self._job_id = job_id
        self._masker = StreamMasker(Masker(redact))
        self._echo_to = echo_to if echo_to is not None else sys.stdout
        self._schedule = FlushSchedule(flush_s, min(GATHER_S, flush_s))
        self._flush_bytes, self._max_buffer, self._clock = flush_bytes, max_buffer, clock
        self._buffer = bytearray()
        self._cond = threading.Condition()
        self._closed = False
        self._first_pending_at: float | None = None
        self._last_sent_at: float | None = None  # when the previous PUT started
        self.offset = 0  # bytes acknowledged by the API
        self.failed: Exception | None = None
        self._partial = b""
        self._tail: deque[str] = deque(maxlen=30)
        self._thread = threading.Thread(target=self._run, name=f"logs-{job_id}", daemon=True)
        self._thread.start()

    def write(self, data: bytes) -> None:
        if data:
            self._write_masked(self._masker.feed(data))

    def _write_masked(self, data: bytes) -> None:
        if not data:
            return
        self._echo(data)
        with self._cond:
            if self.failed is not None or self._closed:
                return
            while len(self._buffer) >= self._max_buffer and self.failed is None:
                self._cond.wait(0.5)
            if self.failed is not None:
                return
            if not self._buffer:
                self._first_pending_at = self._clock()
            self._buffer += data
            self._cond.notify_all()

    def line(self, text: str) -> None:
        self.write((text.rstrip("\n") + "\n").encode())

    def tail(self, lines: int = 20) -> str:
        return "\n".join(list(self._tail)[-lines:])

    def close(self, timeout: float = 60.0) -> None:
        """Flushes everything still buffered, then stops the sender."""
        self._write_masked(self._masker.flush())
        if self._partial:
            self._emit(self._partial)
            self._partial = b""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._ready():
                    due = self.due_at()
                    self._cond.wait(None if due is None else max(due - self._clock(), 0.01))
                if not self._buffer:
                    return  # closed and drained
                chunk = bytes(self._buffer[:MAX_REQUEST_BYTES])
                self._last_sent_at = self._clock()
            try:
                self._send(self.offset, chunk)
            except Exception as exc:
                log.error("job %s: log streaming stopped at offset %d: %s", self._job_id, self.offset, exc)
                with self._cond:
                    self.failed = exc
                    self._buffer.clear()
                    self._cond.notify_all()
                return
            with self._cond:
                del self._buffer[: len(chunk)]
                self.offset += len(chunk)
                self._first_pending_at = self._clock() if self._buffer else None
                self._cond.notify_all()

    def due_at(self) -> float | None:
        """When the pending bytes go out (`FlushSchedule`); None when nothing is pending."""
        if self._first_pending_at is None:
            return None
        return self._schedule.due(self._first_pending_at, self._last_sent_at)

    def _ready(self) -> bool:
        if self._closed or len(self._buffer) >= self._flush_bytes:
            return True
        due = self.due_at()
        return due is not None and self._clock() >= due

    def _echo(self, data: bytes) -> None:
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        if len(self._partial) > MAX_ECHO_LINE:
            lines.append(self._partial)
            self._partial = b""
        for raw in lines:
            self._emit(raw)

    def _emit(self, raw: bytes) -> None:
        text = raw.decode("utf-8", errors="replace").rstrip("\r")
        self._tail.append(text)
        try:
            self._echo_to.write(
                json.dumps({"level": "INFO", "logger": "terrace.runner.job", "job_id": self._job_id, "line": text})
                + "\n"
            )
            self._echo_to.flush()
        except (OSError, ValueError):
            pass
