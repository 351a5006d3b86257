"""A job's folder, and the one rule for every file the (root) runner touches in it.

    <work_dir>/<job id>-XXXX/     the runner's: root-owned, 0711 while its job runs, 0700 while its plan is held
        terraform.tfrc            the CLI configuration (root:<job gid>, 0640: the job reads it, cannot replace it)
        ca-bundle.pem             (0644)
        configuration.tar.gz      downloaded, extracted into config/, removed
        plan.tfplan               the runner's copy of the plan the job wrote (0640): uploaded, shown, applied
        plan.json                 `show -json`'s stdout: a descriptor the runner opened (0600)
        plan.stored               the stored plan an apply downloads (0640)
        config/ home/ tmp/ out/   the job's folders: its uid, 0700 (ssh/ too while init runs)

The rule. Job code (terraform, providers, local-exec) runs as the job's uid and can put a link, a FIFO or a hard
link under any name in the job's folders, at any time while a process of that uid lives. So:
- by path, the runner opens, writes and deletes only in its own folder, which no job uid can write;
- in the job's folders it goes through this class alone: every step from its own folder's descriptor with
  `O_NOFOLLOW` (`openat`); a file it reads back is checked on its descriptor (a regular file of the job's uid
  with one link, bounded in size) and copied into the runner's folder first; a file it writes there is created
  anew (`O_EXCL`) after removing whatever the job left under that name, and handed to the job's uid;
- it walks the job's folders (hand-over, adoption) only while no process of the job's uid is alive;
- removal is `shutil.rmtree`, which never follows a link (`rmtree.avoids_symlink_attacks`).
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from terrace.runner.sandbox import JobIdentity

JOB_FOLDERS = ("config", "home", "tmp", "out")
# Providers listen on "<TMPDIR>/plugin<digits>", which may not pass 107 bytes: past SOCKET_DIR_MAX a job's TMPDIR
# lives in a short folder of the runner's under the system's temporary folder instead (`tmp_dir`).
SOCKET_DIR_MAX = 80
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK = 1 << 20

if not shutil.rmtree.avoids_symlink_attacks:  # pragma: no cover - every Linux Python has it
    raise ImportError("the runner needs an rmtree that never follows links")


class UnsafeJobFile(Exception):
    """A file the runner would read or write in a job's folder is a link, not the job's, or too large."""


class JobFolder:
    def __init__(self, path: Path, uid: int, gid: int, short_tmp: Path | None = None) -> None:
        self.path, self.uid, self.gid, self.short_tmp = path, uid, gid, short_tmp

    @classmethod
    def new(cls, work_dir: Path, prefix: str, identity: JobIdentity | None) -> JobFolder:
        path = Path(tempfile.mkdtemp(prefix=prefix, dir=work_dir))  # the runner's, 0700
        uid, gid = (identity.uid, identity.uid) if identity else (os.geteuid(), os.getegid())
        folder = cls(path, uid, gid)
        for name in JOB_FOLDERS:
            (path / name).mkdir(mode=0o700)
        if len(str(path / "tmp")) > SOCKET_DIR_MAX:
            folder.short_tmp = Path(tempfile.mkdtemp(prefix="terrace-job-"))  # the runner's, in a sticky /tmp
            (folder.short_tmp / "t").mkdir(mode=0o700)
        return folder

    @property
    def config(self) -> Path:
        return self.path / "config"

    @property
    def home(self) -> Path:
        return self.path / "home"

    @property
    def tmp_dir(self) -> Path:
        """The job's TMPDIR: a folder whose parent is the runner's (the job cannot swap it for a link)."""
        return self.short_tmp / "t" if self.short_tmp is not None else self.path / "tmp"

    def _tops(self) -> list[Path]:
        return [self.path, *([self.short_tmp] if self.short_tmp is not None else [])]

    # -- the runner's own files ------------------------------------------------------------------------------

    @contextmanager
    def create(self, name: str, *, job_reads: bool = False) -> Iterator[BinaryIO]:
        """A new file `name` in the runner's folder (whatever was there is removed first); 0640 to the job's
        group when `job_reads`, else 0600."""
        assert "/" not in name
        path = self.path / name
        path.unlink(missing_ok=True)
        fd = os.open(path, _NEW_FILE, 0o600)
        if job_reads:
            os.fchown(fd, -1, self.gid)
            os.fchmod(fd, 0o640)
        with os.fdopen(fd, "wb") as out:
            yield out

    def write(self, name: str, data: bytes, *, job_reads: bool = False) -> Path:
        with self.create(name, job_reads=job_reads) as out:
            out.write(data)
        return self.path / name

    # -- the job's files, through descriptors ----------------------------------------------------------------

    def _relative(self, path: Path) -> tuple[str, ...]:
        parts = path.relative_to(self.path).parts
        if not parts or parts[0] not in JOB_FOLDERS or ".." in parts:
            raise UnsafeJobFile(f"{path} is not in a job folder")
        return parts

    @contextmanager
    def _folder_fd(self, parts: tuple[str, ...]) -> Iterator[int]:
        """A descriptor of the folder `parts` below the runner's folder; no step may be a link."""
        fd = os.open(self.path, _DIR)
        try:
            for part in parts:
                try:
                    child = os.open(part, _DIR, dir_fd=fd)
                except OSError as exc:  # ELOOP / ENOTDIR: a link or a file where a folder was
                    raise UnsafeJobFile(f"{part!r} on the way to a job file is not a folder") from exc
                os.close(fd)
                fd = child
            yield fd
        finally:
            os.close(fd)

    def copy_from_job(self, source: Path, name: str, max_bytes: int, *, job_reads: bool = False) -> Path:
        """Copies the job's file `source` into the runner's folder as `name`, refusing anything but a regular
        file of the job's uid with a single link and at most `max_bytes`; returns the copy's path."""
        *folders, leaf = self._relative(source)
        with self._folder_fd(tuple(folders)) as dir_fd:
            try:
                fd = os.open(leaf, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
            except OSError as exc:
                raise UnsafeJobFile(f"the job's {leaf} cannot be opened as a file ({exc.strerror})") from exc
        with os.fdopen(fd, "rb") as src:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_uid != self.uid or info.st_nlink != 1:
                raise UnsafeJobFile(f"the job's {leaf} is not a regular file of its own")
            if info.st_size > max_bytes:
                raise UnsafeJobFile(f"the job's {leaf} is larger than {max_bytes} bytes")
            with self.create(name, job_reads=job_reads) as out:
                copied = 0
                while chunk := src.read(_CHUNK):
                    copied += len(chunk)
                    if copied > max_bytes:
                        raise UnsafeJobFile(f"the job's {leaf} is larger than {max_bytes} bytes")
                    out.write(chunk)
        return self.path / name

    def write_to_job(self, target: Path, text: str) -> None:
        """Writes a new file at `target` in a job folder (removing what the job left there), owned by the job."""
        *folders, leaf = self._relative(target)
        with self._folder_fd(tuple(folders)) as dir_fd:
            try:
                info = os.lstat(leaf, dir_fd=dir_fd)
            except FileNotFoundError:
                info = None
            if info is not None:
                if stat.S_ISDIR(info.st_mode):
                    raise UnsafeJobFile(f"the job left a folder where {leaf} goes")
                os.unlink(leaf, dir_fd=dir_fd)  # a link is removed, never followed
            fd = os.open(leaf, _NEW_FILE, 0o644, dir_fd=dir_fd)
        with os.fdopen(fd, "w") as out:
            os.fchown(fd, self.uid, self.gid)
            out.write(text)

    # -- ownership over the job's life -----------------------------------------------------------------------

    def _job_entries(self) -> Iterator[Path]:
        for top in self._tops():
            names = JOB_FOLDERS + ("ssh",) if top == self.path else ("t",)
            for name in names:
                start = top / name
                if not os.path.lexists(start):
                    continue
                yield start
                for folder, dirs, files in os.walk(start, followlinks=False):
                    for entry in (*dirs, *files):
                        yield Path(folder) / entry

    def hand_over(self) -> None:
        """Before the job's first process: what the runner made in the job's folders becomes the job's, and the
        runner's folder passable (not listable) for the job. Nothing of the job has run yet, so nothing in
        there is a link or file the job made."""
        if self.uid != os.geteuid():
            for path in self._job_entries():
                if os.lstat(path).st_uid == os.geteuid():
                    os.lchown(path, self.uid, self.gid)
        for top in self._tops():
            os.chmod(top, 0o711)

    def hold(self) -> None:
        """The job's processes are gone and its plan is kept: no job uid (the next job may get the same one) can
        enter the folder anymore."""
        for top in self._tops():
            os.chmod(top, 0o700)

    def adopt(self, identity: JobIdentity | None) -> None:
        """A held folder goes to the next job of the same run: what the plan's uid owned becomes its uid's.
        Only the plan's uid's entries change owner, so a hard link to anyone else's file keeps its owner."""
        uid, gid = (identity.uid, identity.uid) if identity else (os.geteuid(), os.getegid())
        if uid != self.uid:
            for path in self._job_entries():
                if os.lstat(path).st_uid == self.uid:
                    os.lchown(path, uid, gid)
        for name in ("terraform.tfrc", "plan.tfplan", "plan.stored"):
            if os.path.lexists(self.path / name):
                os.lchown(self.path / name, -1, gid)
        self.uid, self.gid = uid, gid
        for top in self._tops():
            os.chmod(top, 0o711)

    def intact(self, cwd: Path) -> bool:
        """Every folder from this one down to `cwd` (the job's working directory), `home` and `tmp` is a real
        folder, not a link the job left: a held folder is reused for its apply only then."""
        try:
            for path in (cwd, self.home, self.tmp_dir):
                top = self.short_tmp if self.short_tmp is not None and path == self.tmp_dir else self.path
                parts = path.relative_to(top).parts
                for depth in range(len(parts) + 1):
                    if not stat.S_ISDIR(os.lstat(top.joinpath(*parts[:depth])).st_mode):
                        return False
        except (OSError, ValueError):
            return False
        return True

    def remove(self) -> None:
        for top in self._tops():
            shutil.rmtree(top, ignore_errors=True)
