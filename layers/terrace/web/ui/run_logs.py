"""Reading a phase log for the run page by byte offset, through the LogService the API's log-read URLs use.

While a phase runs only whole lines are handed out (a colour sequence or a UTF-8 character is never cut
in half); the next read starts at the returned offset. `done` says no more bytes will come.
"""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup

from terrace.domain import runs as rs
from terrace.domain.runs import Run
from terrace.services.runs.logs import ETX, STX, LogService
from terrace.web.ui.ansi import ansi_to_html

LIVE_LIMIT = 64 * 1024  # bytes per poll
FIRST_LIMIT = 1024 * 1024  # bytes in the page itself


@dataclass(frozen=True)
class LogChunk:
    phase: str
    html: Markup
    next_offset: int
    done: bool
    started: bool


def read_chunk(logs: LogService, run: Run, phase_name: str, offset: int, limit: int = LIVE_LIMIT) -> LogChunk:
    phase = run.phase(phase_name)
    if phase.status in (rs.P_PENDING, rs.P_UNREACHABLE):  # not started: nothing comes once the run is over
        return LogChunk(phase_name, Markup(""), offset, run.final or phase.final, False)
    data = logs.read(phase.id, offset, limit, final=phase.final, archived=phase.log_archived)
    done = phase.final and len(data) < limit
    if phase.final or len(data) == limit and b"\n" not in data:
        used = len(data)
    else:
        used = data.rfind(b"\n") + 1  # whole lines only while the phase writes
    text = data[:used].replace(STX, b"").replace(ETX, b"").decode("utf-8", errors="replace")
    return LogChunk(phase_name, ansi_to_html(text), offset + used, done, True)
