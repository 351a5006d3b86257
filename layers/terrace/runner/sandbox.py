"""Per-job isolation of terraform's children: an unprivileged uid of their own, a PID namespace, a whole-tree kill.

Decided once per runner process (`probe`): as root every child runs as a job uid no other job on this host
holds (an exclusive lock file per uid in a root-only folder), with no supplementary groups and
no_new_privs, inside `unshare --pid --fork --mount-proc --kill-child` when namespaces are available; after
every child and every job all processes of that uid are killed (`kill -9 -1` run as the uid), which
`setsid` or a double fork cannot escape. Not root: no uid switch (one loud warning); a user+PID namespace
when unprivileged user namespaces are allowed.
"""

from __future__ import annotations

import ctypes
import fcntl
import logging
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("terrace.runner.sandbox")
UID_RANGE = (61000, 61999)
LOCK_DIR = Path("/run/terrace-runner-uids")
_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class Capabilities:
    switch_uid: bool
    namespace_prefix: tuple[str, ...]  # empty when no PID namespace can be made


@dataclass
class JobIdentity:
    uid: int
    lock_fd: int

    def release(self) -> None:
        os.close(self.lock_fd)


_caps: Capabilities | None = None


def probe() -> Capabilities:
    """What this runner can enforce; probed once and logged."""
    global _caps
    if _caps is not None:
        return _caps
    root = os.geteuid() == 0 and shutil.which("setpriv") is not None
    prefix: tuple[str, ...] = ()
    unshare = shutil.which("unshare")
    if unshare:
        base = [unshare] if root else [unshare, "--user", "--map-root-user"]
        candidate = (*base, "--pid", "--fork", "--mount-proc", "--kill-child", "--")
        ok = subprocess.run([*candidate, "true"], capture_output=True, timeout=10, check=False).returncode == 0
        prefix = candidate if ok else ()
    _caps = Capabilities(switch_uid=root, namespace_prefix=prefix)
    if not root:
        log.warning(
            "RUNNER IS NOT ROOT: terraform children run as the runner's own user and can read its files and "
            "secrets; use this only for development"
        )
    log.info("job isolation: per-job uid=%s, PID namespace=%s", root, bool(prefix))
    return _caps


def allocate(lock_dir: Path = LOCK_DIR, uid_range: tuple[int, int] = UID_RANGE) -> JobIdentity | None:
    """A uid no other job on this host holds until `release`; None when the runner cannot switch uid."""
    if not probe().switch_uid:
        return None
    lock_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(lock_dir, 0o700)
    for uid in range(uid_range[0], uid_range[1] + 1):
        fd = os.open(lock_dir / str(uid), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        kill_uid(uid)  # a crashed runner may have left processes of this uid behind
        return JobIdentity(uid=uid, lock_fd=fd)
    raise RuntimeError(f"no free job uid in {uid_range[0]}-{uid_range[1]}")


def wrap(argv: list[str], identity: JobIdentity | None) -> list[str]:
    """argv prefixed with the namespace and identity switch the runner can make."""
    wrapped = list(argv)
    if identity is not None:
        uid = str(identity.uid)
        wrapped = ["setpriv", "--reuid", uid, "--regid", uid, "--clear-groups", "--no-new-privs", "--", *wrapped]
    return [*probe().namespace_prefix, *wrapped]


def die_with_parent() -> None:
    """preexec: the namespace's first process is SIGKILLed when the runner dies, taking the namespace down."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def interruptible() -> None:
    """preexec: the child starts with no signal blocked and SIGINT at its default, whatever the runner inherited.
    A process started in the background by a shell (`terrace dev &`, a service manager) has SIGINT ignored, and an
    ignored signal stays ignored across exec: terraform (Go keeps an ignored SIGINT ignored) and a shell's `trap`
    would then never see the cancel."""
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def uid_pids(uid: int) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    pids.append(int(entry))
            except FileNotFoundError:
                continue
    return pids


def kill_uid(uid: int, deadline_s: float = 10.0) -> None:
    """SIGKILLs every process of `uid` (as that uid, so nothing else is touched) until none remains."""
    end = time.monotonic() + deadline_s
    while uid_pids(uid):
        subprocess.run(
            ["setpriv", "--reuid", str(uid), "--regid", str(uid), "--clear-groups", "kill", "-9", "-1"],
            capture_output=True,
            check=False,
        )
        if time.monotonic() > end:
            log.error("processes of job uid %d survive SIGKILL: %s", uid, uid_pids(uid))
            return
        time.sleep(0.02)


def hand_over(run_dir: Path, identity: JobIdentity | None) -> None:
    """The job folder 0700 and owned by the job uid (the runner wrote it as root)."""
    os.chmod(run_dir, 0o700)
    if identity is None:
        return
    for path in [run_dir, *run_dir.rglob("*")]:
        os.lchown(path, identity.uid, identity.uid)


def reclaim(folders: list[Path]) -> None:
    """Back to the runner once the job uid's processes are gone: owned by the runner and 0700, so no job uid
    (the next job may get the same one) reads them. Links are re-owned, never followed."""
    for top in folders:
        if probe().switch_uid:
            for path in [top, *top.rglob("*")]:
                os.lchown(path, os.geteuid(), os.getegid())
        os.chmod(top, 0o700)


def prepare_work_dir(work_dir: Path) -> None:
    """Root-owned and not listable by job uids: they reach their own folder only."""
    work_dir.mkdir(parents=True, exist_ok=True)
    if probe().switch_uid:
        os.chmod(work_dir, 0o711)
