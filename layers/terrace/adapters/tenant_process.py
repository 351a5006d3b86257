"""The one way the server runs tenant-supplied code (a policy's Rego, an uploaded module's HCL): a Python module of
this package in a child process of its own, with

- an unprivileged uid of its own when this process may switch uids (`tenant_identity.py`: root), no groups,
  no_new_privs: it cannot read the server's data folder, its keys or its database; and no network: a module child
  cannot open a socket (`no_sockets.py`, a seccomp filter; a git clone, `run_program`, keeps the network);
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

import importlib
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import IO

from terrace.adapters import no_sockets, tenant_identity
from terrace.adapters.tenant_identity import Identity

WATCH_S = 0.02
EXIT_S = 5.0
PAGE = os.sysconf("SC_PAGE_SIZE")
FILES_MAX_BYTES = 16 * 1024 * 1024  # what a child may write (the engine's diagnostics go to a temporary file)
DESCRIPTORS_MAX = 64
UID_ARGUMENT = "--tenant-uid="  # how a Python child learns the uid it drops to (`enter`)
DROP_POLL_S = 0.002


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
    `PYTHONPATH` (default `child_path()`). With a uid leased for the call the child drops to it first (`enter`)
    and is given its request only once /proc shows it did: a module that does not drop gets nothing."""
    with tenant_identity.lease() as identity:
        return _run_module(module, request, limits, python, path, identity)


def _run_module(
    module: str, request: bytes, limits: Limits, python: Sequence[str], path: str | None, identity: Identity | None
) -> Outcome:
    uid = [] if identity is None else [f"{UID_ARGUMENT}{identity.uid}"]
    child = subprocess.Popen(  # noqa: S603 - our interpreter and a module of this package
        [*_limited(limits, FILES_MAX_BYTES, identity), *python, "-P", "-s", "-m", module, *uid],
        env={"PYTHONPATH": child_path() if path is None else path},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd="/",
        close_fds=True,
        start_new_session=True,
    )
    try:
        _limit(child.pid, limits, identity=identity)
        ready = None if identity is None else (lambda: tenant_identity.dropped(child.pid, identity.uid))
        stdout, stopped = _watch(child, request, limits, ready)
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
    argv: Sequence[str],
    env: dict[str, str],
    cwd: str,
    limits: Limits,
    files_max_bytes: int = FILES_MAX_BYTES,
    *,
    identity: Identity | None,
) -> Outcome:
    """Runs a program of the host (git over a tenant's repository) as a module is run above: only `env` (built by
    the caller from nothing), no stdin, stdout and stderr together (kept: `Outcome.stdout`), its own session killed
    as a whole at the end, CPU, core, file-size and descriptor limits, its resident memory and time watched; as
    `identity` (the caller's lease, through `setpriv`: several steps share one folder) when not None, and then
    every process of that uid is killed when it ends."""
    child = subprocess.Popen(  # noqa: S603 - a program of the host, arguments as a list (no shell)
        [*_limited(limits, files_max_bytes, identity), *tenant_identity.wrap(list(argv), identity)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=cwd,
        close_fds=True,
        start_new_session=True,
    )
    try:
        _limit(child.pid, limits, files_max_bytes, identity)
        stdout, stopped = _watch(child, b"", limits)
    finally:
        _kill_group(child.pid)
        if child.poll() is None:
            child.kill()
        child.wait()
        _close(child)
        if identity is not None:
            tenant_identity.kill_all(identity.uid)  # one that left the session cannot touch the folder afterwards
    if stopped is None and child.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        stopped = "cpu"
    return Outcome(stdout=stdout, returncode=child.returncode, stopped=stopped)


def enter(preload: Sequence[str] = ()) -> None:
    """The child's first step, before it reads its request: an empty environment (the engine's `opa.runtime()`
    reads the process's environment when a policy calls it), files it creates readable by no one else, then the
    modules it will need imported (`preload`: after the uid drop the interpreter's own folder may be out of
    reach), the drop to the uid it was given (`UID_ARGUMENT`) and no sockets (`no_sockets.py`)."""
    os.environ.clear()  # unsetenv for each: the C library's environment too
    os.umask(0o077)
    for name in preload:
        importlib.import_module(name)
    uids = [int(a.removeprefix(UID_ARGUMENT)) for a in sys.argv[1:] if a.startswith(UID_ARGUMENT)]
    for uid in uids:
        tenant_identity.drop(uid)
    try:
        no_sockets.install()
    except OSError:
        if uids:  # with a uid of its own the filter is required (the parent checks it is there)
            raise
        # the server's uid (Lambda, a developer's machine): no network filter where the kernel refuses one


def _limits(limits: Limits, files_max_bytes: int) -> list[tuple[int, str, tuple[int, int]]]:
    cpu = max(1, int(limits.cpu_s))
    return [
        (resource.RLIMIT_CPU, "cpu", (cpu, cpu + 1)),
        (resource.RLIMIT_CORE, "core", (0, 0)),
        (resource.RLIMIT_FSIZE, "fsize", (files_max_bytes, files_max_bytes)),
        (resource.RLIMIT_NOFILE, "nofile", (DESCRIPTORS_MAX, DESCRIPTORS_MAX)),
    ]


def _limit(pid: int, limits: Limits, files_max_bytes: int = FILES_MAX_BYTES, identity: Identity | None = None) -> None:
    """The limits set from here on a child of the server's uid. One with a uid of its own got them from `prlimit`
    before it started (root without CAP_SYS_RESOURCE, as in a container, cannot set another uid's limits)."""
    if identity is not None:
        return
    for kind, _name, value in _limits(limits, files_max_bytes):
        resource.prlimit(pid, kind, value)


def _limited(limits: Limits, files_max_bytes: int, identity: Identity | None) -> list[str]:
    """The `prlimit` command that starts a child with a uid of its own with its limits already set, and with
    RLIMIT_NPROC (counted per uid: the leased uid's processes alone)."""
    if identity is None:
        return []
    processes = tenant_identity.PROCESSES_MAX
    named = [(name, value) for _kind, name, value in _limits(limits, files_max_bytes)]
    options = [f"--{name}={soft}:{hard}" for name, (soft, hard) in [*named, ("nproc", (processes, processes))]]
    return [tenant_identity.prlimit(), *options, "--"]


def _watch(
    child: subprocess.Popen[bytes], request: bytes, limits: Limits, ready: Callable[[], bool] | None = None
) -> tuple[bytes, str | None]:
    """What the child wrote, and None once it exited by itself, else why it was killed. The request is written
    (once `ready` says so) and the answer read by two threads of their own (a request larger than the pipe's
    buffer, an answer read while the child runs), so this loop only watches."""
    assert child.stdout is not None
    written: list[bytes] = []
    over = threading.Event()
    feeder = threading.Thread(target=_feed, args=(child.stdin, request, ready, over), daemon=True)
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
    over.set()
    _kill_group(child.pid)  # stopped, or exited: what it started goes too (and lets go of the pipe)
    reader.join(EXIT_S)
    if child.stdin is not None:
        feeder.join(EXIT_S)
    return b"".join(written), stopped


def _feed(stdin: IO[bytes] | None, request: bytes, ready: Callable[[], bool] | None, over: threading.Event) -> None:
    if stdin is None:
        return
    while ready is not None and not ready():
        if over.wait(DROP_POLL_S):
            return  # it ended (or was stopped) before it dropped its privileges: it gets nothing
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
