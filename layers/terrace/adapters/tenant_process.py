"""The one way the server runs tenant-supplied code (a policy's Rego, an uploaded module's HCL): a Python module of
this package in a child process of its own, with

- an empty environment: only `PYTHONPATH` (computed from this process's `sys.path`, never inherited: on Lambda the
  execution role's credentials are in the environment) so the child can import the package, and the child
  empties even that before it reads its request (`enter`), so nothing it evaluates can read an environment;
- no inherited descriptor: stdin (the request) and stdout (the answer) are pipes, stderr is /dev/null, every
  other descriptor is closed, its working folder is `/`;
- its own session and process group, SIGKILLed as a whole when the call ends, however it ends;
- limits set on it from here (`prlimit`) before it is given its request: CPU seconds (SIGXCPU, then SIGKILL), no
  core dump, a few MiB of files, few descriptors; its resident memory watched from /proc every few milliseconds
  (the Rego engine's allocator reserves a huge address space up front, so an address-space limit cannot bound
  it) and its wall-clock time: past either it is killed.

`tests/unit/test_tenant_code_rule.py` holds every other module of the package to this: none but the runner's own
sandbox may start a process.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO

WATCH_S = 0.02
EXIT_S = 5.0
PAGE = os.sysconf("SC_PAGE_SIZE")
FILES_MAX_BYTES = 16 * 1024 * 1024  # what a child may write (the engine's diagnostics go to a temporary file)
DESCRIPTORS_MAX = 64


@dataclass(frozen=True)
class Limits:
    cpu_s: int
    memory_bytes: int
    timeout_s: float


@dataclass(frozen=True)
class Outcome:
    """What the child wrote on stdout (also when it was stopped: what it wrote until then), its exit code and,
    when it was stopped or died of a limit, which: "memory", "time" or "cpu"."""

    stdout: bytes
    returncode: int | None
    stopped: str | None


def child_path() -> str:
    """The `PYTHONPATH` that lets a child import what this process imports: its `sys.path`, without the current
    folder."""
    return os.pathsep.join(p for p in sys.path if p and os.path.isabs(p))


def run_module(
    module: str,
    request: bytes,
    limits: Limits,
    *,
    python: Sequence[str] = (sys.executable,),
    path: str | None = None,
) -> Outcome:
    """Runs `python -m module` as above, `request` on its stdin; returns when it exited or was stopped.

    `python`: the interpreter's command (`tools/arm64_rego_check.py` gives an emulated arm64 one), `path`: its
    `PYTHONPATH` (default `child_path()`)."""
    child = subprocess.Popen(  # noqa: S603 - our interpreter and a module of this package
        [*python, "-P", "-s", "-m", module],
        env={"PYTHONPATH": child_path() if path is None else path},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd="/",
        close_fds=True,
        start_new_session=True,
    )
    try:
        _limit(child.pid, limits)
        stdout, stopped = _watch(child, request, limits)
    finally:
        _kill_group(child.pid)
        if child.poll() is None:
            child.kill()
        child.wait()
        _close(child)
    if stopped is None and child.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        stopped = "cpu"  # RLIMIT_CPU: SIGXCPU at the soft limit, SIGKILL at the hard one
    return Outcome(stdout=stdout, returncode=child.returncode, stopped=stopped)


def run_program(
    argv: Sequence[str], env: dict[str, str], cwd: str, limits: Limits, files_max_bytes: int = FILES_MAX_BYTES
) -> Outcome:
    """Runs a program of the host (git over a tenant's repository) as a module is run above: only `env` (built by
    the caller from nothing), no stdin, stdout and stderr together (kept: `Outcome.stdout`), its own session killed
    as a whole at the end, CPU, core, file-size and descriptor limits, its resident memory and time watched."""
    child = subprocess.Popen(  # noqa: S603 - a program of the host, arguments as a list (no shell)
        list(argv),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=cwd,
        close_fds=True,
        start_new_session=True,
    )
    try:
        _limit(child.pid, limits, files_max_bytes)
        stdout, stopped = _watch(child, b"", limits)
    finally:
        _kill_group(child.pid)
        if child.poll() is None:
            child.kill()
        child.wait()
        _close(child)
    if stopped is None and child.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        stopped = "cpu"
    return Outcome(stdout=stdout, returncode=child.returncode, stopped=stopped)


def enter() -> None:
    """The child's first step, before it reads its request: an empty environment (the engine's `opa.runtime()`
    reads the process's environment when a policy calls it) and files it creates readable by no one else."""
    os.environ.clear()  # unsetenv for each: the C library's environment too
    os.umask(0o077)


def _limit(pid: int, limits: Limits, files_max_bytes: int = FILES_MAX_BYTES) -> None:
    cpu = max(1, int(limits.cpu_s))
    for kind, value in (
        (resource.RLIMIT_CPU, (cpu, cpu + 1)),
        (resource.RLIMIT_CORE, (0, 0)),
        (resource.RLIMIT_FSIZE, (files_max_bytes, files_max_bytes)),
        (resource.RLIMIT_NOFILE, (DESCRIPTORS_MAX, DESCRIPTORS_MAX)),
    ):
        resource.prlimit(pid, kind, value)


def _watch(child: subprocess.Popen[bytes], request: bytes, limits: Limits) -> tuple[bytes, str | None]:
    """What the child wrote, and None once it exited by itself, else why it was killed. The request is written
    and the answer read by two threads of their own (a request larger than the pipe's buffer, an answer read
    while the child runs), so this loop only watches."""
    assert child.stdout is not None
    written: list[bytes] = []
    feeder = threading.Thread(target=_feed, args=(child.stdin, request), daemon=True)
    reader = threading.Thread(target=_drain, args=(child.stdout, written), daemon=True)
    if child.stdin is not None:
        feeder.start()
    reader.start()
    deadline = time.monotonic() + limits.timeout_s
    stopped: str | None = None
    while child.poll() is None:
        if _resident_bytes(child.pid) > limits.memory_bytes:
            stopped = "memory"
        elif time.monotonic() > deadline:
            stopped = "time"
        if stopped is not None:
            break
        reader.join(WATCH_S)
    _kill_group(child.pid)  # stopped, or exited: what it started goes too (and lets go of the pipe)
    reader.join(EXIT_S)
    if child.stdin is not None:
        feeder.join(EXIT_S)
    return b"".join(written), stopped


def _feed(stdin: IO[bytes] | None, request: bytes) -> None:
    if stdin is None:
        return
    try:
        stdin.write(request)
        stdin.close()
    except (OSError, ValueError):  # it exited (or was killed) before it read everything
        pass


def _drain(stdout: IO[bytes], into: list[bytes]) -> None:
    try:
        while chunk := stdout.read1(65536):  # type: ignore[attr-defined]
            into.append(chunk)
    except (OSError, ValueError):
        pass


def _resident_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as statm:
            return int(statm.read().split()[1]) * PAGE
    except (OSError, ValueError, IndexError):
        return 0


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)  # the child leads its own group: whatever it started goes with it
    except (ProcessLookupError, PermissionError):
        pass


def _close(child: subprocess.Popen[bytes]) -> None:
    for stream in (child.stdin, child.stdout):
        if stream is not None and not stream.closed:
            stream.close()
