"""Safe extraction of configuration tarballs: nothing lands outside the destination folder."""

from __future__ import annotations

import os
import posixpath
import shutil
import tarfile
from pathlib import Path, PurePosixPath
from typing import IO

MAX_ENTRIES = 100_000
MAX_TOTAL_BYTES = 512 * 1024 * 1024  # expanded size; TERRACE_RUNNER_MAX_CONFIG_EXPANDED_BYTES
_CHUNK = 1 << 20


class UnsafeArchive(ValueError):
    """The tarball holds an entry that could escape the destination, or is too large."""


def _normalized(name: str) -> str:
    """The member's path relative to the archive root; rejects absolute paths and `..`."""
    if name.startswith(("/", "\\")) or PurePosixPath(name).is_absolute() or (len(name) > 1 and name[1] == ":"):
        raise UnsafeArchive(f"absolute path in archive: {name!r}")
    if "\x00" in name:
        raise UnsafeArchive("NUL byte in an archive path")
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnsafeArchive(f"'..' in archive path: {name!r}")
    return "/".join(parts)


def _link_target_inside(member_path: str, target: str, *, hard: bool) -> str:
    """The link's target relative to the root, or UnsafeArchive when it could point outside.

    Symlink targets may climb (`..`) only before their first named component: a `..` after a name that
    is itself a symlink would climb from wherever that symlink points, which a lexical check cannot see.
    """
    if not target or target.startswith("/") or PurePosixPath(target).is_absolute() or "\x00" in target:
        raise UnsafeArchive(f"link {member_path!r} points to an absolute or empty path")
    parts = [p for p in target.split("/") if p not in ("", ".")]
    if hard:
        if ".." in parts:
            raise UnsafeArchive(f"hard link {member_path!r} points outside the configuration")
        return "/".join(parts)
    named = False
    for part in parts:
        if part == ".." and named:
            raise UnsafeArchive(f"link {member_path!r} has '..' after a path name")
        named = named or part != ".."
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(member_path), *parts) if parts else ".")
    if resolved == ".." or resolved.startswith("../"):
        raise UnsafeArchive(f"link {member_path!r} points outside the configuration")
    return "/".join(parts) or "."


def extract(archive: Path, dest: Path, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_TOTAL_BYTES) -> int:
    """Extracts a (gzipped) tarball into `dest`; returns the number of entries. Raises UnsafeArchive."""
    dest.mkdir(parents=True, exist_ok=True)
    root = dest.resolve()
    count = total = 0
    try:
        tar = tarfile.open(archive, mode="r:*")
    except tarfile.TarError as exc:
        raise UnsafeArchive(f"not a readable tar archive: {exc}") from exc
    with tar:
        links: list[tuple[str, str, bool]] = []
        for member in tar:
            count += 1
            if count > max_entries:
                raise UnsafeArchive(f"the archive holds more than {max_entries} entries")
            rel = _normalized(member.name)
            if not rel:
                continue
            target = root / rel
            _ensure_parent_inside(root, target)
            if member.isdir():
                target.mkdir(parents=True, exist_ok=True)
                os.chmod(target, 0o755)
            elif member.isfile():
                if total + member.size > max_bytes:  # the declared size: refused before any byte is written
                    raise UnsafeArchive(f"the archive expands to more than {max_bytes} bytes")
                target.parent.mkdir(parents=True, exist_ok=True)
                _remove_existing(target)
                source = tar.extractfile(member)
                if source is None:
                    raise UnsafeArchive(f"unreadable entry {member.name!r}")
                with source, target.open("wb") as out:
                    total = _copy_counted(source, out, total, max_bytes)
                os.chmod(target, 0o755 if member.mode & 0o111 else 0o644)
            elif member.issym() or member.islnk():
                links.append((rel, _link_target_inside(rel, member.linkname, hard=member.islnk()), member.islnk()))
            else:
                raise UnsafeArchive(f"unsupported entry type in archive (device, fifo, ...): {member.name!r}")
        for rel, link_target, hard in links:  # after the files, so targets exist and are checked for real
            _make_link(root, rel, link_target, hard)
    return count


def _copy_counted(source: IO[bytes], out: IO[bytes], total: int, max_bytes: int) -> int:
    """Copies while counting the bytes really expanded, so no header can understate them; the new total."""
    while chunk := source.read(_CHUNK):
        total += len(chunk)
        if total > max_bytes:
            raise UnsafeArchive(f"the archive expands to more than {max_bytes} bytes")
        out.write(chunk)
    return total


def _ensure_parent_inside(root: Path, target: Path) -> None:
    """Guards against writing through a symlinked folder made by an earlier entry."""
    parent = target.parent
    if parent.exists() and not parent.resolve().is_relative_to(root):
        raise UnsafeArchive(f"entry {target.name!r} would be written outside the configuration")


def _remove_existing(target: Path) -> None:
    if target.is_symlink() or target.is_file():
        target.unlink()


def _make_link(root: Path, rel: str, link_target: str, hard: bool) -> None:
    path = root / rel
    _ensure_parent_inside(root, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.is_dir() and not path.is_symlink():
        raise UnsafeArchive(f"link {rel!r} would replace a folder")
    _remove_existing(path)
    if hard:
        absolute_target = (root / link_target).resolve()
        if not absolute_target.is_relative_to(root) or not absolute_target.is_file():
            raise UnsafeArchive(f"hard link {rel!r} points outside the configuration or to a missing file")
        shutil.copyfile(absolute_target, path)  # a copy: never share an inode with anything
        return
    # Leading `..` climb from the link's real folder (its parents may be symlinks made earlier).
    real_target = Path(os.path.normpath(path.parent.resolve() / link_target))
    if not real_target.is_relative_to(root):
        raise UnsafeArchive(f"link {rel!r} points outside the configuration")
    os.symlink(link_target, path)


def working_dir(root: Path, working_directory: str) -> Path:
    """`root/working_directory`, which must stay inside root and exist."""
    rel = _normalized(working_directory.strip()) if working_directory.strip() else ""
    path = (root / rel).resolve() if rel else root.resolve()
    if not path.is_relative_to(root.resolve()):
        raise UnsafeArchive(f"working directory {working_directory!r} is outside the configuration")
    if not path.is_dir():
        raise UnsafeArchive(f"working directory {working_directory!r} does not exist in the configuration")
    return path
