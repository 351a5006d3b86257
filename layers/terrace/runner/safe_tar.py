"""Safe extraction of configuration tarballs: nothing lands outside the destination folder.

Each entry passes `tarfile`'s `data` extraction filter (`tarfile.data_filter`, PEP 706), which refuses what could
escape the destination: a path leaving it (`..`, or through a link made earlier), a link pointing outside it or to
an absolute path, device files and FIFOs; it also drops setuid/setgid bits and ownership. Kept here is only what the
filter does not do:
- the archive is opened by `domain/bounded_tar.py`'s `open_tar`, as every archive of the package: an extension
  header (long name or link, PAX) above a few KiB, a sparse member or a decompressed stream past the bounds below
  (with each entry's headers) refuses it before anything is allocated;
- the entry-count and expanded-size limits, counted while streaming (no header can understate the bytes written);
- an absolute entry name is refused, not stripped to a relative one as the filter does;
- a symbolic link may climb (`..`) only before its first named component: the filter resolves a link against the
  folders as they are when it is checked, and a later entry could turn a name in it into a link of its own;
- links are made after every file and folder (no file is ever written through a link of the archive), a file is
  created anew without following a link (`O_NOFOLLOW`, `O_EXCL`), the destination itself must not be a link, and a
  hard link becomes a copy of a regular file inside the destination (no inode is shared with anything).
The runner extracts into a folder of its own before any job process runs (`runner/job_folder.py`).
"""

from __future__ import annotations

import os
import shutil
import tarfile
from pathlib import Path, PurePosixPath

from terrace.domain.bounded_tar import ArchiveRefused, TarReader, expanded_limit, open_tar

MAX_ENTRIES = 100_000
MAX_TOTAL_BYTES = 512 * 1024 * 1024  # expanded size; TERRACE_RUNNER_MAX_CONFIG_EXPANDED_BYTES
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafeArchive(ValueError):
    """The tarball holds an entry that could escape the destination, or is too large."""


def _checked(member: tarfile.TarInfo, root: Path) -> tarfile.TarInfo:
    """The member as the `data` filter passes it (against the folder as it is now), or UnsafeArchive."""
    name = member.name
    if name.startswith("/"):
        raise UnsafeArchive(f"absolute path in archive: {name!r}")
    if "\x00" in name or "\x00" in member.linkname:
        raise UnsafeArchive("NUL byte in an archive path")
    if member.issym():
        _no_climb_after_a_name(name, member.linkname)
    try:
        return tarfile.data_filter(member, str(root))
    except tarfile.AbsolutePathError:
        raise UnsafeArchive(f"absolute path in archive: {name!r}") from None
    except tarfile.OutsideDestinationError:
        raise UnsafeArchive(f"'..' or a link takes archive path {name!r} outside the configuration") from None
    except tarfile.AbsoluteLinkError:
        raise UnsafeArchive(f"link {name!r} points to an absolute path") from None
    except tarfile.LinkOutsideDestinationError:
        raise UnsafeArchive(f"link {name!r} points outside the configuration") from None
    except tarfile.SpecialFileError:
        raise UnsafeArchive(f"unsupported entry type in archive (device, fifo, ...): {name!r}") from None
    except tarfile.FilterError as exc:  # pragma: no cover - every FilterError subclass is named above
        raise UnsafeArchive(f"unsafe entry {name!r}: {exc}") from None


def _no_climb_after_a_name(name: str, target: str) -> None:
    if not target:
        raise UnsafeArchive(f"link {name!r} points to an empty path")
    named = False
    for part in target.split("/"):
        if part == ".." and named:
            raise UnsafeArchive(f"link {name!r} has '..' after a path name")
        named = named or part not in ("", ".", "..")


def extract(archive: Path, dest: Path, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_TOTAL_BYTES) -> int:
    """Extracts a (gzipped) tarball into `dest`; returns the number of entries. Raises UnsafeArchive."""
    if dest.is_symlink():
        raise UnsafeArchive("the destination is a link")
    dest.mkdir(parents=True, exist_ok=True)
    root = dest.resolve()
    try:
        with archive.open("rb") as source, open_tar(source, expanded_limit(max_bytes, max_entries)) as tar:
            return _extract(tar, root, max_entries, max_bytes)
    except ArchiveRefused as exc:
        raise UnsafeArchive(str(exc)) from exc


def _extract(tar: TarReader, root: Path, max_entries: int, max_bytes: int) -> int:
    count = total = 0
    links: list[tarfile.TarInfo] = []
    for member in tar:
        count += 1
        if count > max_entries:
            raise UnsafeArchive(f"the archive holds more than {max_entries} entries")
        member = _checked(member, root)
        target = root / member.name
        if target == root:
            continue
        if member.isdir():
            target.mkdir(parents=True, exist_ok=True)
            os.chmod(target, 0o755)
        elif member.isfile():
            if total + member.size > max_bytes:  # the declared size: refused before any byte is written
                raise UnsafeArchive(f"the archive expands to more than {max_bytes} bytes")
            total = _write_file(tar, member, target, total, max_bytes)
        elif member.issym() or member.islnk():
            links.append(member)
        else:  # pragma: no cover - the filter refuses every other type
            raise UnsafeArchive(f"unsupported entry type in archive: {member.name!r}")
    for member in links:  # after the files, so targets exist; checked again against the folder as it now is
        _make_link(root, _checked(member, root))
    return count


def _write_file(tar: TarReader, member: tarfile.TarInfo, target: Path, total: int, max_bytes: int) -> int:
    """Copies the entry while counting the bytes really expanded; the new total."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_dir() and not target.is_symlink():
        raise UnsafeArchive(f"file {member.name!r} would replace a folder")
    _remove_existing(target)
    with os.fdopen(os.open(target, _NEW_FILE, 0o600), "wb") as out:
        for chunk in tar.chunks(member):
            total += len(chunk)
            if total > max_bytes:
                raise UnsafeArchive(f"the archive expands to more than {max_bytes} bytes")
            out.write(chunk)
    os.chmod(target, 0o755 if member.mode & 0o111 else 0o644)
    return total


def _remove_existing(target: Path) -> None:
    if target.is_symlink() or target.is_file():
        target.unlink()


def _make_link(root: Path, member: tarfile.TarInfo) -> None:
    path = root / member.name
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_dir() and not path.is_symlink():
        raise UnsafeArchive(f"link {member.name!r} would replace a folder")
    _remove_existing(path)
    if member.islnk():
        source = (root / member.linkname).resolve()
        if not source.is_relative_to(root) or not source.is_file():
            raise UnsafeArchive(f"hard link {member.name!r} points outside the configuration or to a missing file")
        shutil.copyfile(source, path)  # a copy: never share an inode with anything
        return
    os.symlink(member.linkname, path)


def working_dir(root: Path, working_directory: str) -> Path:
    """`root/working_directory`, which must stay inside root and exist."""
    rel = working_directory.strip()
    if rel.startswith("/") or PurePosixPath(rel).is_absolute() or ".." in rel.replace("\\", "/").split("/"):
        raise UnsafeArchive(f"working directory {working_directory!r} is outside the configuration")
    path = (root / rel).resolve() if rel else root.resolve()
    if not path.is_relative_to(root.resolve()):
        raise UnsafeArchive(f"working directory {working_directory!r} is outside the configuration")
    if not path.is_dir():
        raise UnsafeArchive(f"working directory {working_directory!r} does not exist in the configuration")
    return path
