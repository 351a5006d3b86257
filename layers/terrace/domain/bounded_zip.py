"""Every zip archive the package reads is opened here: a release archive of terraform or OpenTofu
(`runner/tool_fetch.py`) is a zip. Bounded before anything is allocated: the archive's size on disk, the number of
entries in its central directory, each entry's declared size, and the bytes actually written while it is
decompressed (a declared size that lies stops at the cap, whatever the header says). Only the one member asked
for is read, by its exact name: no path of the archive ever becomes a path on disk.
"""

from __future__ import annotations

import io
import posixpath
import zipfile
from pathlib import Path
from typing import BinaryIO

from terrace.domain.bounded_tar import ArchiveRefused, write_tar

ENTRIES_MAX = 64  # a release zip holds the binary and a licence or two
_CHUNK = 1 << 20


def extract_member(archive: Path, name: str, out: BinaryIO, *, archive_max: int, member_max: int) -> int:
    """Write member `name` of the zip `archive` to `out`, at most `member_max` bytes; the bytes written.
    ArchiveRefused when the archive is above `archive_max` bytes, has more than ENTRIES_MAX entries, lacks the
    member, or the member is (or decompresses to) more than `member_max` bytes or fails its CRC."""
    size = archive.stat().st_size
    if size > archive_max:
        raise ArchiveRefused(f"the archive is {size} bytes, above the bound of {archive_max}")
    try:
        with zipfile.ZipFile(archive) as zipped:
            entries = zipped.infolist()
            if len(entries) > ENTRIES_MAX:
                raise ArchiveRefused(f"the archive has {len(entries)} entries, above the bound of {ENTRIES_MAX}")
            member = next((e for e in entries if e.filename == name and not e.is_dir()), None)
            if member is None:
                raise ArchiveRefused(f"the archive holds no {name!r}")
            if member.file_size > member_max:
                raise ArchiveRefused(f"{name} declares {member.file_size} bytes, above the bound of {member_max}")
            written = 0
            with zipped.open(member) as source:
                while chunk := source.read(_CHUNK):
                    written += len(chunk)
                    if written > member_max:
                        raise ArchiveRefused(f"{name} expands beyond the bound of {member_max} bytes")
                    out.write(chunk)
            return written
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, NotImplementedError) as exc:
        raise ArchiveRefused(f"not a readable zip archive: {exc}") from exc


def zip_as_tar(raw: bytes, top: str, *, entries_max: int, expanded_max: int) -> bytes:
    """The files and folders of the zip `raw` under the folder `top`, as a .tar.gz. ArchiveRefused past
    `entries_max` entries or `expanded_max` bytes expanded (declared or actual), for a name leading out (absolute,
    `..`), a link or an unreadable archive."""
    out, total = io.BytesIO(), 0
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as zipped, write_tar(out) as packed:
            entries = zipped.infolist()
            if len(entries) > entries_max:
                raise ArchiveRefused(f"the archive has {len(entries)} entries, above the bound of {entries_max}")
            if sum(e.file_size for e in entries) > expanded_max:
                raise ArchiveRefused(f"the archive declares more than {expanded_max} bytes expanded")
            for entry in entries:
                name = entry.filename.replace("\\", "/").lstrip("/")
                normal = posixpath.normpath(name) if name else "."
                if entry.filename.startswith("/") or normal == ".." or normal.startswith("../") or "\x00" in name:
                    raise ArchiveRefused(f"{entry.filename!r} leads out of the archive")
                if (entry.external_attr >> 16) & 0o170000 == 0o120000:
                    raise ArchiveRefused(f"{entry.filename!r} is a link")
                if normal == ".":
                    continue
                if entry.is_dir():
                    packed.add(f"{top}/{normal}", None, 0o755)
                    continue
                data = bytearray()
                with zipped.open(entry) as source:
                    while chunk := source.read(_CHUNK):
                        total += len(chunk)
                        if total > expanded_max:
                            raise ArchiveRefused(f"the archive expands beyond the bound of {expanded_max} bytes")
                        data += chunk
                packed.add(f"{top}/{normal}", bytes(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, NotImplementedError) as exc:
        raise ArchiveRefused(f"not a readable zip archive: {exc}") from exc
    return out.getvalue()
