"""Reading a phase log for the run page by byte offset, through the LogService the API's log-read URLs use.

While a phase runs only whole lines are handed out (a colour sequence or a UTF-8 character is never cut
in half); the next read starts at the returned offset. `done` says no more bytes will come.
"""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup

from terrace.domain import errors
from terrace.domain import runs as rs
from terrace.domain.runs import Run
from terrace.services.runs.logs import ETX, MAX_READ, STX, LogService
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
    text: str = ""  # the bytes read, as text (terminal codes kept): what the errored run's summary reads
    note: str = ""  # what the log box says while it has no line: waiting, running, or why the phase will not run


def read_chunk(logs: LogService, run: Run, phase_name: str, offset: int, limit: int = LIVE_LIMIT) -> LogChunk:
    phase = run.phase(phase_name)
    if phase.status in (rs.P_PENDING, rs.P_UNREACHABLE):  # not started: nothing comes once the run is over
        skipped = not_running(run, phase_name)
        note = f"The {phase_name} will not run: {skipped}." if skipped else f"Waiting for the {phase_name} to start…"
        if not skipped and phase_name == "apply" and run.status in rs.AWAITING_CONFIRMATION:
            note = "The apply waits for a confirmation of the plan."
        done = run.final or phase.final or (phase_name == "apply" and run.plan_only)  # a cancel still lands
        return LogChunk(phase_name, Markup(""), offset, done, False, note=note)
    data = logs.read(phase.id, offset, limit, final=phase.final, archived=phase.log_archived)
    done = phase.final and len(data) < limit
    if phase.final or len(data) == limit and b"\n" not in data:
        used = len(data)
    else:
        used = data.rfind(b"\n") + 1  # whole lines only while the phase writes
    text = data[:used].replace(STX, b"").replace(ETX, b"").decode("utf-8", errors="replace")
    note = f"The {phase_name} is running; its log appears here as terraform writes it…"
    if done:
        note = f"The {phase_name} ({phase.status}) wrote no log." if offset == 0 and not text.strip() else ""
    return LogChunk(phase_name, ansi_to_html(text), offset + used, done, True, text=text, note=note)


def whole_log(logs: LogService, run: Run, phase_name: str) -> bytes:
    """Every byte of the phase's log written so far (masked as the API's log-read URLs serve it), without the
    stream's start and end markers; NotFound before the phase started."""
    phase = run.phase(phase_name)
    if phase.started_at is None:  # no runner has started it: there is no log
        raise errors.NotFound(f"the {phase_name} of run {run.id} has no log")
    parts: list[bytes] = []
    offset = 0
    while data := logs.read(phase.id, offset, MAX_READ, final=phase.final, archived=phase.log_archived):
        parts.append(data)
        offset += len(data)
        if len(data) < MAX_READ:
            break
    return b"".join(parts).replace(STX, b"").replace(ETX, b"")


def not_running(run: Run, phase_name: str) -> str:
    """Why a phase that has not started never will (as the log box says it), or "" while it still may."""
    if run.cancel_requested_at is not None and not run.final:
        return "the run is being canceled"
    if phase_name == "apply" and run.plan_only:
        return "this run only plans"
    if not run.final and not run.phase(phase_name).final:
        return ""
    return {
        rs.CANCELED: "the run was canceled",
        rs.FORCE_CANCELED: "the run was canceled",
        rs.DISCARDED: "the run was discarded",
        rs.ERRORED: "the run errored",
        rs.PLANNED_AND_FINISHED: "the plan has nothing to apply" if not run.plan_only else "this run only plans",
    }.get(run.status, f"the run is {run.status.replace('_', ' ')}")
