"""The log sink port in memory (tests): every stream's lines in the order they were sent."""

from __future__ import annotations

from collections.abc import Sequence

from terrace.adapters.log_sink import LogLine


class MemoryLogSink:
    def __init__(self) -> None:
        self.streams: dict[str, list[LogLine]] = {}

    def send(self, stream: str, lines: Sequence[LogLine]) -> None:
        self.streams.setdefault(stream, []).extend(lines)
