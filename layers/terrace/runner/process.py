"""Runs the tofu/terraform child in its own process group; cancel = SIGINT once, force-cancel = SIGKILL."""

from __future__ import annotations

import logging
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from terrace.domain.jobs import HeartbeatResponse
from terrace.runner import sandbox
from terrace.runner.sandbox import JobIdentity

log = logging.getLogger("terrace.runner.process")
EXIT_GRACE_S = 2.0


class CancelControl:
    """Cancel requests for the job, applied to whichever child is running now."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self.cancel_requested = False
        self.force_requested = False
        self._interrupted = False

    @property
    def requested(self) -> bool:
        return self.cancel_requested or self.force_requested

    def attach(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._proc, self._interrupted = proc, False
        if self.force_requested:
            self._signal(signal.SIGKILL)
        elif self.cancel_requested:
            self._interrupt()

    def detach(self) -> None:
        with self._lock:
            self._proc = None

    def cancel(self) -> None:
        self.cancel_requested = True
        self._interrupt()

    def force_cancel(self) -> None:
        self.force_requested = True
        self._signal(signal.SIGKILL)

    def apply(self, response: HeartbeatResponse) -> None:
        if response.force_cancel:
            self.force_cancel()
        elif response.cancel:
            self.cancel()

    def _interrupt(self) -> None:
        with self._lock:
            if self._interrupted:
                return
            self._interrupted = True
        self._signal(signal.SIGINT)

    def _signal(self, sig: signal.Signals) -> None:
        with self._lock:
            proc = self._proc
            if proc is None or proc.poll() is not None:
                return
            try:
                os.killpg(proc.pid, sig)  # the child leads its own group: providers get it too
                log.info("sent %s to process group %d", sig.name, proc.pid)
            except ProcessLookupError:
                pass


def run_child(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    sink: Callable[[bytes], object],
    control: CancelControl,
    stdout: BinaryIO | None = None,
    identity: JobIdentity | None = None,
) -> int:
    """Runs argv (as the job's uid, in a PID namespace when the runner can); every process it leaves is killed.

    stdout+stderr go to `sink` (or stdout to `stdout`, a file the runner opened in its own folder: the child gets
    the descriptor, never a path, and stderr to `sink`). Returns the code."""
    proc = subprocess.Popen(
        sandbox.wrap(argv, identity),
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=stdout if stdout is not None else subprocess.PIPE,
        stderr=subprocess.PIPE if stdout is not None else subprocess.STDOUT,
        start_new_session=True,
        close_fds=True,
        preexec_fn=_namespaced_child_setup if sandbox.probe().namespace_prefix else sandbox.interruptible,
    )
    control.attach(proc)
    try:
        stream = proc.stderr if stdout is not None else proc.stdout
        assert stream is not None
        _pump(proc, stream.fileno(), sink)
        stream.close()
        return proc.wait()
    finally:
        control.detach()
        _kill_group(proc)  # whatever the child left behind (a provider still holding the pipe, ...)
        proc.wait()
        if identity is not None:
            sandbox.kill_uid(identity.uid)  # also what left the group (setsid, double fork)


def _namespaced_child_setup() -> None:
    """preexec: signals as a cancel expects them, and the namespace's first process dies with the runner."""
    sandbox.interruptible()
    sandbox.die_with_parent()


def _pump(proc: subprocess.Popen[bytes], fd: int, sink: Callable[[bytes], object]) -> None:
    """Copies output until EOF, or until EXIT_GRACE_S after the child exited while a descendant holds the pipe."""
    exited_at: float | None = None
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            if selector.select(timeout=0.2):
                chunk = os.read(fd, 65536)
                if not chunk:
                    return
                sink(chunk)
                continue
            if proc.poll() is not None:
                exited_at = exited_at or time.monotonic()
                if time.monotonic() - exited_at > EXIT_GRACE_S:
                    return


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class Heartbeat:
    """Calls `beat()` every `interval_s` until stopped; its response drives the cancel control. A log PUT the API
    recorded as a heartbeat (`beaten`) stands for one: the next beat is due `interval_s` after it."""

    def __init__(
        self,
        beat: Callable[[], HeartbeatResponse],
        control: CancelControl,
        interval_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._beat, self._control, self._interval, self._clock = beat, control, max(interval_s, 0.2), clock
        self._last = clock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="heartbeat", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._last = self._clock()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)

    def beaten(self, answer: HeartbeatResponse | None) -> None:
        """A log PUT's answer: when the API recorded it as a heartbeat, it counts as one (its flags applied)."""
        if answer is None:
            return
        self._last = self._clock()
        self._control.apply(answer)

    def _run(self) -> None:
        while not self._stop.wait(max(self._last + self._interval - self._clock(), 0.0)):
            if self._clock() - self._last < self._interval:
                continue  # a log PUT beat meanwhile
            self._last = self._clock()
            try:
                self._control.apply(self._beat())
            except Exception as exc:  # a missed beat is the server's to judge; keep working
                log.warning("heartbeat failed: %s", exc)
