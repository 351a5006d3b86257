"""The runner's log PUTs (`runner/logstream.py`): each is an API request, so steady output goes out in one PUT every
`FLUSH_S`, while the first line after a quiet spell goes out at once (after `GATHER_S` for the rest of its burst)."""

from __future__ import annotations

import io
import time

from terrace.runner.logstream import FLUSH_S, GATHER_S, FlushSchedule, LogStream

WAIT_S = 10.0


def test_a_burst_after_a_quiet_spell_goes_at_once_and_steady_output_once_a_flush_interval() -> None:
    schedule = FlushSchedule()
    assert (FLUSH_S, GATHER_S) == (2.0, 0.1)
    assert schedule.due(first_pending_at=50.0, last_sent_at=None) == 50.1  # the job's first line
    assert schedule.due(first_pending_at=50.0, last_sent_at=40.0) == 50.1  # after a quiet spell
    assert schedule.due(first_pending_at=50.5, last_sent_at=50.1) == 52.1  # steady output waits for the interval


def puts_for_steady_output(schedule: FlushSchedule, seconds: int) -> int:
    """PUTs for one line a second over `seconds` (terraform's "Still creating..." lines, a provisioner's output)."""
    puts, last_sent, pending_since = 0, None, None
    for tick in range(seconds * 100):  # 10 ms steps
        now = tick / 100
        if tick % 100 == 0 and pending_since is None:
            pending_since = now
        if pending_since is not None and now >= schedule.due(pending_since, last_sent):
            puts, last_sent, pending_since = puts + 1, now, None
    return puts + (pending_since is not None)


def test_twenty_seconds_of_steady_output_take_eleven_puts() -> None:
    """One every FLUSH_S and the first at once: 11 PUTs for 20 lines. Before, a PUT went a second after the first
    pending byte: the same 20 lines took 15 PUTs in a real run (`python -m bench.run_requests`)."""
    assert puts_for_steady_output(FlushSchedule(), 20) == 11


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def advance(stream: LogStream, clock: FakeClock, to: float) -> None:
    clock.now = to
    with stream._cond:  # the sender re-reads the clock
        stream._cond.notify_all()


def wait_for(sent: list[bytes], count: int) -> None:
    deadline = time.monotonic() + WAIT_S
    while len(sent) < count and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(sent) >= count, sent


def test_the_stream_sends_as_the_schedule_says() -> None:
    clock = FakeClock()
    sent: list[bytes] = []
    stream = LogStream(lambda _o, chunk: sent.append(chunk), job_id="j", echo_to=io.StringIO(), clock=clock)
    try:
        stream.line("Initializing the backend...")
        assert stream.due_at() == GATHER_S
        advance(stream, clock, GATHER_S)
        wait_for(sent, 1)
        for at, text in ((0.5, "a"), (1.0, "b"), (1.5, "c")):
            advance(stream, clock, at)
            stream.line(text)
        assert stream.due_at() == GATHER_S + FLUSH_S  # not a PUT for each line
        advance(stream, clock, GATHER_S + FLUSH_S)
        wait_for(sent, 2)
        assert sent == [b"Initializing the backend...\n", b"a\nb\nc\n"]
    finally:
        stream.close()
