"""Per-job isolation of terraform's children: an unprivileged uid of their own, a PID namespace, a whole-tree kill.

Decided once per runner process (`probe`): as root every child runs as a job uid no other job on this host
holds (an exclusive lock file per uid in a root-only folder), with no supplementary groups and
no_new_privs, inside `unshare --pid --fork --mount-proc --kill-child` when namespaces are available; after
every child and every job all processes of that uid are killed (`kill -9 -1` run as the uid), which
`setsid` or a double fork cannot escape. Not root: no uid switch (one loud warning); a user+PID namespace
when unprivileged user namespaces are allowed.

Link-local addresses (the ECS agent's credentials endpoint 169.254.170.2, the instance metadata 169.254.169.254,
their IPv6 twins): set up once at start (`guard_link_local`), as root with iptables and NET_ADMIN (ECS on EC2, an
agent's host), the job uids' packets to them are rejected (`-m owner --uid-owner`), the runner's own are not (it
signs with the task role). Fargate grants no NET_ADMIN: there the task role's keys stay behind the endpoint's
relative URI, which only the runner's environment holds (root's: no job uid reads it), and there is no instance
metadata.

Temporary files: a job's TMPDIR is a folder of its job folder (removed with it); children start with umask 077, so
what they create anywhere else is theirs alone; and once a job's processes are gone `sweep_temp` removes whatever
its uid left in /tmp, /var/tmp and /dev/shm, before the uid is free for another job. The same on every host
(Fargate grants no mount namespace).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import logging
import os
import shutil
import signal
import stat
import subprocess
import time
from collections.abc import Callable, Mapping
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


def allocate(
    lock_dir: Path = LOCK_DIR, uid_range: tuple[int, int] = UID_RANGE, temp_roots: tuple[Path, ...] | None = None
) -> JobIdentity | None:
    """A uid no other job on this host holds until `release`; None when the runner cannot switch uid."""
    if not probe().switch_uid:
        return None
    roots = SHARED_TEMP if temp_roots is None else temp_roots

    def reclaim(uid: int) -> None:
        kill_uid(uid)  # a crashed runner may have left processes of this uid behind
        sweep_temp(uid, roots)  # and its files in shared folders, which the next job of this uid could read

    uid, fd = lease_uid(lock_dir, uid_range, reclaim, "job")
    return JobIdentity(uid=uid, lock_fd=fd)


def lease_uid(lock_dir: Path, uid_range: tuple[int, int], reclaim: Callable[[int], None], kind: str) -> tuple[int, int]:
    """The first uid of `uid_range` whose lock file in `lock_dir` (0700) this process could flock, with the lock's
    descriptor (held until closed), after `reclaim(uid)` removed what a holder that died left behind. Job uids and
    the server's tenant uids are leased this way."""
    lock_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(lock_dir, 0o700)
    for uid in range(uid_range[0], uid_range[1] + 1):
        fd = os.open(lock_dir / str(uid), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        reclaim(uid)
        return uid, fd
    raise RuntimeError(f"no free {kind} uid in {uid_range[0]}-{uid_range[1]}")


SHARED_TEMP = (Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"))


def wrap(argv: list[str], identity: JobIdentity | None) -> list[str]:
    """argv prefixed with the namespace and identity switch the runner can make."""
    wrapped = list(argv)
    if identity is not None:
        uid = str(identity.uid)
        wrapped = ["setpriv", "--reuid", uid, "--regid", uid, "--clear-groups", "--no-new-privs", "--", *wrapped]
    return [*probe().namespace_prefix, *wrapped]


def sweep_temp(uid: int, roots: tuple[Path, ...] = SHARED_TEMP) -> None:
    """Removes what `uid` left in the shared temporary folders (its processes are gone): every entry it owns in
    them or in a world-writable folder below them (the only places it could create one). Descriptor-based
    (`os.fwalk`, `dir_fd`): another job's uid that swaps a folder for a link meanwhile cannot redirect a removal."""
    for root in roots:
        if not root.is_dir():
            continue
        for _folder, dirs, files, dir_fd in os.fwalk(root, follow_symlinks=False):
            for name in (*dirs, *files):
                try:
                    info = os.lstat(name, dir_fd=dir_fd)
                except FileNotFoundError:
                    continue
                if info.st_uid != uid:
                    continue
                with contextlib.suppress(FileNotFoundError):
                    if stat.S_ISDIR(info.st_mode):
                        shutil.rmtree(name, dir_fd=dir_fd, ignore_errors=True)
                    else:
                        os.unlink(name, dir_fd=dir_fd)
            dirs[:] = [d for d in dirs if _world_writable(d, dir_fd)]


def die_with_parent() -> None:
    """preexec: the namespace's first process is SIGKILLed when the runner dies, taking the namespace down."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def interruptible() -> None:
    """preexec: the child starts with no signal blocked, SIGINT at its default, whatever the runner inherited, and
    umask 077.
    A process started in the background by a shell (`terrace dev &`, a service manager) has SIGINT ignored, and an
    ignored signal stays ignored across exec: terraform (Go keeps an ignored SIGINT ignored) and a shell's `trap`
    would then never see the cancel."""
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.umask(0o077)  # what a job creates in shared places (/tmp, /dev/shm) no other job uid can read


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


def _world_writable(name: str, dir_fd: int) -> bool:
    try:
        info = os.lstat(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return False
    return stat.S_ISDIR(info.st_mode) and bool(info.st_mode & stat.S_IWOTH)


def prepare_work_dir(work_dir: Path) -> None:
    """Root-owned and not listable by job uids: they reach their own folder only."""
    work_dir.mkdir(parents=True, exist_ok=True)
    if probe().switch_uid:
        os.chmod(work_dir, 0o711)


LINK_LOCAL = (("iptables", "169.254.0.0/16"), ("ip6tables", "fe80::/10"), ("ip6tables", "fd00:ec2::/32"))
ON_ECS = ("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "ECS_CONTAINER_METADATA_URI_V4")
# what an EC2 instance's firmware says of it (read from sysfs: no request to the metadata service)
EC2_MARKS = (("/sys/devices/virtual/dmi/id/board_asset_tag", "i-"), ("/sys/devices/virtual/dmi/id/sys_vendor",
             "Amazon EC2"), ("/sys/hypervisor/uuid", "ec2"))  # fmt: skip


def on_ec2(marks: tuple[tuple[str, str], ...] = EC2_MARKS) -> bool:
    """Whether this host is an EC2 instance (its DMI asset tag is the instance id, its vendor Amazon EC2, or a Xen
    instance's hypervisor uuid starts with ec2)."""
    for path, prefix in marks:
        try:
            if Path(path).read_text(errors="replace").strip().startswith(prefix):
                return True
        except OSError:
            continue
    return False


def guard_link_local(
    mode: str,
    env: Mapping[str, str],
    uid_range: tuple[int, int] = UID_RANGE,
    *,
    ec2: Callable[[], bool] | None = None,
    who: str = "jobs",
) -> bool:
    """At start (`TERRACE_RUNNER_BLOCK_LINK_LOCAL`: `auto` on ECS only, `true`, `false`): whether the uids of
    `uid_range` (`who`: job uids, or the server's tenant children, `local/embedded.py`) are now kept from link-local
    addresses; what holds otherwise is logged once. `ec2`: `auto` also blocks on an EC2 host (the server's; an
    agent's jobs may use their instance's role, so the runner's `auto` is ECS only)."""
    detected = any(env.get(name) for name in ON_ECS) or (ec2 is not None and ec2())
    if mode == "false" or (mode == "auto" and not detected):
        return False
    if not probe().switch_uid:
        log.warning("link-local addresses are not blocked for %s: they run as this process's own uid", who)
        return False
    if block_link_local(uid_range):
        log.info("the uids of %s, %d-%d, cannot reach link-local addresses (iptables)", who, *uid_range)
        return True
    log.warning(
        "link-local addresses are not blocked for %s (no usable iptables, or no NET_ADMIN as on Fargate): the "
        "task role's credentials endpoint answers only the relative URI this process's environment holds",
        who,
    )
    return False


def link_local_rules(uid_range: tuple[int, int] = UID_RANGE) -> list[tuple[str, list[str]]]:
    owner = ["-m", "owner", "--uid-owner", f"{uid_range[0]}-{uid_range[1]}"]
    return [(tool, ["OUTPUT", *owner, "-d", network, "-j", "REJECT"]) for tool, network in LINK_LOCAL]


def block_link_local(uid_range: tuple[int, int] = UID_RANGE) -> bool:
    """Rejects the job uids' packets to link-local addresses (each rule added once, first in OUTPUT); True when
    IPv4's is in place (IPv6's where ip6tables works)."""
    placed: dict[str, bool] = {}
    for tool, rule in link_local_rules(uid_range):
        present = _iptables(tool, "-C", rule)
        placed[tool] = placed.get(tool, True) and (present or _iptables(tool, "-I", rule))
    return placed["iptables"]


def unblock_link_local(uid_range: tuple[int, int] = UID_RANGE) -> None:
    for tool, rule in link_local_rules(uid_range):
        while _iptables(tool, "-C", rule) and _iptables(tool, "-D", rule):
            pass


def _iptables(tool: str, action: str, rule: list[str]) -> bool:
    path = shutil.which(tool)
    if path is None:
        return False
    try:
        done = subprocess.run([path, "-w", "5", action, *rule], capture_output=True, timeout=15, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0
