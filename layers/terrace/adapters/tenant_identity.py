"""Who a tenant child (`tenant_process.py`) runs as: when this process may switch uids (root, with /proc and
`setpriv`), an unprivileged uid of its own, leased for the call, with no supplementary groups and no_new_privs, so
that a hole in the Rego engine or the HCL parser reads nothing of the server's (the data folder is 0700 or 0711
and its files 0600, all the server's). Otherwise (Lambda runs as one uid, a developer as themselves) the child
runs as the server's uid: `prepare`, called by the composition root at start, says so once in the log and makes
the server's process non-dumpable, so that a child of its uid can read neither its environment (on Lambda the
role's keys) nor its memory through /proc, nor attach to it.

A lease takes an exclusive lock on a file per uid in a root-only folder (`LOCK_DIR`), so two calls, or two server
processes of the host, never share a uid; on release every process of the uid is SIGKILLed (a child that left its
session cannot outlive the call) and what it left in the shared temporary folders is removed, before the next
child gets the uid. A Python child drops to its uid itself (`drop`, in `tenant_process.enter`: the interpreter
may live where only root may pass, as pyenv's under /root) and the parent hands it its request only once /proc
shows it did (`dropped`); a host program (git) is started through `setpriv` (`wrap`).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import shutil
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("terrace.tenant_identity")
UID_RANGE = (62000, 62999)  # the runner's job uids are 61000-61999 (`runner/sandbox.py`)
LOCK_DIR = Path("/run/terrace-tenant-uids")
SHARED_TEMP = (Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"))
PROCESSES_MAX = 64  # RLIMIT_NPROC of a child with a uid of its own: its threads and git's helpers, no fork bomb
KILL_S = 5.0
_PR_GET_DUMPABLE, _PR_SET_DUMPABLE, _PR_SET_NO_NEW_PRIVS = 3, 4, 38
_switch: bool | None = None


@dataclass(frozen=True)
class Identity:
    uid: int
    lock_fd: int


def probe() -> bool:
    """Whether tenant children get uids of their own; decided once and logged."""
    global _switch
    if _switch is None:
        tools = all(shutil.which(name) for name in ("setpriv", "prlimit"))
        _switch = os.geteuid() == 0 and os.path.isdir("/proc/self") and tools
        if _switch:
            log.info("tenant children (policies, uploaded HCL, git clones) run as uids %d-%d", *UID_RANGE)
        else:
            log.warning(
                "tenant children (policies, uploaded HCL, git clones) run as the server's own uid %d: only root "
                "(with setpriv and prlimit) gives them uids of their own; they keep an empty environment and their "
                "limits",
                os.geteuid(),
            )
    return _switch


def prepare() -> bool:
    """At start: whether tenant children get uids of their own (logged once); when they do not, this process
    becomes non-dumpable (its /proc entries are root's, ptrace needs CAP_SYS_PTRACE). A child's exec makes the
    child dumpable again: this hides the server from its children, not them from it."""
    switch = probe()
    if not switch:
        _prctl(_PR_SET_DUMPABLE, 0)
    return switch


def dumpable() -> bool:
    return bool(ctypes.CDLL(None, use_errno=True).prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0))


def _prctl(option: int, value: int) -> None:
    if ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option}, {value})")


@contextlib.contextmanager
def lease(lock_dir: Path = LOCK_DIR, uid_range: tuple[int, int] = UID_RANGE) -> Iterator[Identity | None]:
    """A uid no other tenant child of this host holds until the block ends (then its processes and temporary
    files go); None when this process cannot switch uids."""
    if not probe():
        yield None
        return
    identity = _allocate(lock_dir, uid_range)
    try:
        yield identity
    finally:
        try:
            kill_all(identity.uid)
            sweep_temp(identity.uid)
        finally:
            os.close(identity.lock_fd)


def _allocate(lock_dir: Path, uid_range: tuple[int, int]) -> Identity:
    from terrace.runner.sandbox import lease_uid  # the runner's lease of job uids, imported when a call needs one

    def reclaim(uid: int) -> None:  # a server that died mid-call left its child's processes and files behind
        kill_all(uid)
        sweep_temp(uid)

    uid, fd = lease_uid(lock_dir, uid_range, reclaim, "tenant")
    return Identity(uid=uid, lock_fd=fd)


def prlimit() -> str:
    return shutil.which("prlimit") or "prlimit"


def wrap(argv: list[str], identity: Identity | None) -> list[str]:
    """A host program's argv started as `identity` (unchanged for None)."""
    if identity is None:
        return argv
    uid = str(identity.uid)
    setpriv = shutil.which("setpriv") or "setpriv"
    return [setpriv, "--reuid", uid, "--regid", uid, "--clear-groups", "--no-new-privs", "--", *argv]


def drop(uid: int) -> None:
    """In the child, before it reads anything a tenant gave: no groups, `uid` as real, effective and saved uid and
    gid, no_new_privs (no setuid program gives any of it back). Dumpable again (a uid change clears it) so that
    its /proc entries are its uid's, where `kill_all` finds them; its core limit is 0."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    _prctl(_PR_SET_NO_NEW_PRIVS, 1)
    _prctl(_PR_SET_DUMPABLE, 1)


def dropped(pid: int, uid: int) -> bool:
    """Whether /proc shows `pid` as `uid` alone (every uid and gid, no supplementary group, no_new_privs) and
    under a seccomp filter (`no_sockets.py`)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            fields = dict(line.split(":", 1) for line in status if ":" in line)
    except OSError:
        return False
    ids = [str(uid)] * 4
    return (
        fields.get("Uid", "").split() == ids
        and fields.get("Gid", "").split() == ids
        and not fields.get("Groups", "").split()
        and fields.get("NoNewPrivs", "").strip() == "1"
        and fields.get("Seccomp", "").strip() == "2"
    )


def uid_pids(uid: int) -> list[int]:
    """The processes of `uid` (the runner's sandbox counts its job uids' the same way)."""
    from terrace.runner import sandbox  # imported when a lease ends, not with the API

    return sandbox.uid_pids(uid)


def kill_all(uid: int, deadline_s: float = KILL_S) -> None:
    """SIGKILLs every process of `uid` until none is left. Each through a pidfd whose process is checked to be of
    `uid` after it was opened, so a pid reused meanwhile by another process is never signalled."""
    end = time.monotonic() + deadline_s
    while pids := uid_pids(uid):
        for pid in pids:
            with contextlib.suppress(OSError):
                fd = os.pidfd_open(pid)
                try:
                    if os.stat(f"/proc/{pid}").st_uid == uid:
                        signal.pidfd_send_signal(fd, signal.SIGKILL)
                finally:
                    os.close(fd)
        if time.monotonic() > end:
            log.error("processes of tenant uid %d survive SIGKILL: %s", uid, pids)
            return
        time.sleep(0.005)


def sweep_temp(uid: int, roots: tuple[Path, ...] = SHARED_TEMP) -> None:
    """Removes what `uid` left in the shared temporary folders, as the runner's sandbox does for a job uid (every entry
    it owns in them or in a world-writable folder below them, descriptor-based)."""
    from terrace.runner import sandbox  # imported when a lease ends, not with the API

    sandbox.sweep_temp(uid, roots)
