"""The log sink port: lines appended to a named stream of a log service, oldest first (the audit trail's copy in
CloudWatch Logs, `services/audit/export.py`). Implementations: `cloudwatch_log_sink.py` (AWS, a log group of the
stack) and `memory_log_sink.py` (tests)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

LogLine = tuple[int, str]  # (epoch milliseconds, message)


class LogSink(Protocol):
    def send(self, stream: str, lines: Sequence[LogLine]) -> None:
        """Append `lines` (oldest first) to `stream`, creating it when absent; raises when they were not taken."""
        ...
