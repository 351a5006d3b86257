"""Cancel (SIGINT once) and force-cancel (SIGKILL) of the child; log streaming offsets."""

from __future__ import annotations

import io
import signal
import stat
import sys
import threading
import time
from pathlib import Path

from runner_fakes import FakeApi, fake_terraform, make_spec, runner_config, tarball
from terrace.runner.execution import JobExecutor
from terrace.runner.logstream import LogStream
from terrace.runner.process import CancelControl, run_child

# Waits in 0.1 s slices: bash runs a trap whose signal arrived between forking a background job and `wait` only once
# that job ends, so one `sleep 30 & wait $!` sat out its 30 s when the SIGINT landed in that gap on a loaded machine.
TRAPS_INT = (
    "trap 'echo \"got SIGINT\"; kill $! 2>/dev/null; exit 130' INT; echo started; "
    'i=0; while [ $i -lt 300 ]; do sleep 0.1 & wait $!; i=$((i+1)); done; echo "not canceled"'
)
# No command substitution (`for i in $(seq 60)`): a SIGINT landing in its subshell ended the loop at once.
IGNORES_INT = (
    "trap 'echo ignoring SIGINT' INT; i=0; "
    "while [ $i -lt 60 ]; do [ $i = 0 ] && echo started; sleep 0.5; i=$((i+1)); done"
)
WAIT_S = 25  # below the children's 30 s: a child that ends by itself is told apart by its output/exit code
# One process that ignores SIGINT and runs until killed (up to 10 minutes): no shell forking a `sleep` that a SIGINT
# can catch half-started, and no self-imposed end racing the test's deadlines on a loaded machine.
IGNORES_INT_PY = """
import os, signal, time
signal.signal(signal.SIGINT, lambda *_: os.write(1, b"ignoring SIGINT\\n"))  # a write a signal cannot break into
os.write(1, b"started\\n")
end = time.monotonic() + 600
while time.monotonic() < end:
    time.sleep(0.1)
"""


def script(tmp_path: Path, body: str, interpreter: str = "/bin/bash") -> Path:
    path = tmp_path / "child.sh"
    path.write_text(f"#!{interpreter}\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def start(
    tmp_path: Path, body: str, interpreter: str = "/bin/bash"
) -> tuple[CancelControl, threading.Thread, dict[str, object]]:
    control = CancelControl()
    result: dict[str, object] = {"out": bytearray()}

    def go() -> None:
        result["code"] = run_child(
            [str(script(tmp_path, body, interpreter))],
            cwd=tmp_path,
            env={"PATH": "/usr/bin:/bin"},
            sink=result["out"].extend,
            control=control,  # type: ignore[attr-defined]
        )

    thread = threading.Thread(target=go)
    thread.start()
    deadline = time.monotonic() + WAIT_S  # the trap is installed once "started" is printed
    while b"started" not in result["out"]:  # type: ignore[operator]
        assert time.monotonic() < deadline, "the child never started"
        time.sleep(0.02)
    return control, thread, result


def stopped(thread: threading.Thread) -> bool:
    """Joins with a generous deadline (a loaded machine is slow; the children run 30 s when not stopped)."""
    thread.join(WAIT_S)
    return not thread.is_alive()


def test_cancel_sends_sigint_once(tmp_path: Path) -> None:
    control, thread, result = start(tmp_path, TRAPS_INT)
    control.cancel()
    control.cancel()  # a second cancel does not signal again
    assert stopped(thread)
    assert b"got SIGINT" in result["out"] and b"not canceled" not in result["out"]  # type: ignore[operator]
    assert result["code"] == 130


SIGNAL_STATE = "grep -E '^Sig(Blk|Ign):' /proc/self/status; echo started"


def _sigint_in(mask_hex: str) -> bool:
    return bool(int(mask_hex, 16) & (1 << (signal.SIGINT - 1)))


def test_children_start_interruptible_whatever_the_runner_inherited(tmp_path: Path) -> None:
    """A runner started in the background by a shell has SIGINT ignored (and a thread may have it blocked): its
    children must not inherit that, or terraform (Go keeps an ignored SIGINT ignored) never sees a cancel."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        outcome: dict[str, object] = {}

        def blocked_thread() -> None:
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            outcome["state"] = start(tmp_path, SIGNAL_STATE)
            control, thread, result = start(tmp_path / "trap", TRAPS_INT)
            control.cancel()
            outcome["trap"] = (stopped(thread), result)

        (tmp_path / "trap").mkdir()
        worker = threading.Thread(target=blocked_thread)
        worker.start()
        worker.join(WAIT_S * 2)
    finally:
        signal.signal(signal.SIGINT, previous)
    _control, state_thread, state = outcome["state"]  # type: ignore[misc]
    assert stopped(state_thread)
    lines = dict(line.split(":") for line in bytes(state["out"]).decode().splitlines() if line.startswith("Sig"))
    assert not _sigint_in(lines["SigBlk"].strip()) and not _sigint_in(lines["SigIgn"].strip()), lines
    was_stopped, result = outcome["trap"]  # type: ignore[misc]
    assert was_stopped and b"got SIGINT" in result["out"], result  # the cancel interrupted it


def test_force_cancel_kills_a_child_that_ignores_sigint(tmp_path: Path) -> None:
    control, thread, result = start(tmp_path, IGNORES_INT_PY, interpreter=sys.executable)
    try:
        # its handler is set: a SIGINT that lands earlier is lost (the first process of a PID namespace without a
        # handler); the child writes with os.write, which a signal handler's own write cannot re-enter
        deadline = time.monotonic() + WAIT_S
        while b"started" not in result["out"]:  # type: ignore[operator]
            assert time.monotonic() < deadline, "the child never started"
            time.sleep(0.02)
        control.cancel()
        while b"ignoring SIGINT" not in result["out"]:  # type: ignore[operator]
            assert time.monotonic() < deadline, "SIGINT never reached the child"
            time.sleep(0.02)
        assert thread.is_alive(), result  # SIGINT ignored: the child runs on until killed
        control.force_cancel()
        assert stopped(thread)
        assert result["code"] == -9  # killed
    finally:
        control.force_cancel()  # a failed assertion leaves no child behind
        thread.join(WAIT_S)


def test_job_canceled_by_heartbeat(tmp_path: Path) -> None:
    # cancel once the plan's trap is set (its "started" reached the API): a SIGINT that lands before it is lost on a
    # process that is the first of its PID namespace and has no handler yet
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": ""})}, cancel_when_logged=b"started")
    spec = make_spec("plan")
    fake.specs[spec.job_id] = spec
    binary = fake_terraform(tmp_path / "bin", plan_body=TRAPS_INT.replace("exit 130", "exit 1"))
    api, transfers = fake.clients()
    report = JobExecutor(runner_config(tmp_path, binary), api, transfers, echo_to=io.StringIO()).execute(spec)
    assert report.status == "canceled"
    log = bytes(fake.logs[spec.job_id]).decode()
    assert "got SIGINT" in log and "The run was canceled." in log
    assert "not canceled" not in log  # interrupted, not ended after its 30 s


def test_job_force_canceled_by_heartbeat(tmp_path: Path) -> None:
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": ""})}, force_after=1)
    spec = make_spec("plan")
    fake.specs[spec.job_id] = spec
    binary = fake_terraform(tmp_path / "bin", plan_body=IGNORES_INT)
    api, transfers = fake.clients()
    report = JobExecutor(runner_config(tmp_path, binary), api, transfers, echo_to=io.StringIO()).execute(spec)
    assert report.status == "canceled"


def test_log_stream_offsets_are_contiguous_and_complete() -> None:
    sent: list[tuple[int, bytes]] = []
    in_flight = threading.Semaphore(1)
    overlaps: list[int] = []

    def send(offset: int, chunk: bytes) -> None:
        if not in_flight.acquire(blocking=False):
            overlaps.append(offset)
            return
        try:
            time.sleep(0.002)
            sent.append((offset, chunk))
        finally:
            in_flight.release()

    echo = io.StringIO()
    stream = LogStream(
        send, job_id="j", redact=["hunter2-secret"], echo_to=echo, flush_s=0.05, flush_bytes=1000, max_buffer=4000
    )
    expected = bytearray()
    for i in range(2000):
        line = f"line {i} hunter2-secret {'x' * (i % 50)}\n".encode()
        expected += line.replace(b"hunter2-secret", b"***")  # masked in the chunks sent too
        stream.write(line[:7])
        stream.write(line[7:])
    stream.close()
    assert not overlaps
    offset = 0
    for chunk_offset, chunk in sent:
        assert chunk_offset == offset
        offset += len(chunk)
    assert b"".join(c for _, c in sent) == bytes(expected)
    assert stream.offset == len(expected)
    assert len(sent) > 10  # really chunked
    assert "hunter2-secret" not in echo.getvalue() and '"line": "line 1999 ***' in echo.getvalue()


def test_log_stream_flushes_on_time_not_only_on_size() -> None:
    sent: list[bytes] = []
    stream = LogStream(lambda _o, c: sent.append(c), job_id="j", echo_to=io.StringIO(), flush_s=0.1)
    stream.line("hello")
    deadline = time.monotonic() + WAIT_S
    while not sent and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sent == [b"hello\n"]
    stream.close()
