"""Every tar archive the package reads is opened here (`open_tar`), bounded before anything is allocated; and an
uploaded tarball's files read in memory within bounds (`read_files`): what the private registry (module versions)
and policy as code (policy set versions) receive. The runner's `runner/safe_tar.py` extracts through `open_tar`.

`tarfile` reads an extension header's whole payload into memory before any filter sees the member it describes: a
GNU long name or long link (`L`, `K`) or a PAX header (`x`, `X`, `g`) announcing 400 MB is 400 MB allocated, and
more in the copies made of it. So `open_tar` hands tarfile a `TarInfo` of its own whose `_proc_member` (the
dispatch point tarfile documents for subclasses) checks each header as tarfile reads it, before its payload is
read: an extension header above `EXTENSION_MAX` bytes, global PAX headers above `GLOBAL_MAX` in all, more than
`CHAIN_MAX` extension headers before one member and sparse members (whose maps tarfile also reads unbounded) refuse
the archive. The check is on tarfile's own reading of the header, so no second parser can disagree with it. The
decompressed stream is capped (`expanded_max`: a gzip bomb stops there, whatever the headers say), gzip or plain
tar only, and the members are handed out one at a time, never retained (tarfile keeps every member it read).

`read_files` passes each member through tarfile's `data` filter against a notional root (absolute paths, `..`
escapes, links leading outside and special files refuse the whole tarball), then reads its regular files within
the bounds given: the compressed size, the number of members, each file's size and the uncompressed total.
"""

from __future__ import annotations

import gzip
import io
import posixpath
import re
import tarfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any, Literal

from terrace.domain.errors import Invalid

EXTENSION_MAX = 64 * 1024  # one L/K/x/X/g header's payload: a PAX header with a long path is a few hundred bytes
GLOBAL_MAX = 2 * 1024  # all global (g) PAX headers of one archive: each member gets a copy of what they hold
DIGITS_MAX = 64  # consecutive digits in a PAX header (a time, a size: about 20)
DIGIT_RUN = re.compile(rb"[0-9]{%d}" % (DIGITS_MAX + 1))
RECORD = re.compile(rb"([1-9][0-9]{0,5}) [^=\n]+=")
CHAIN_MAX = 8  # extension headers before one member (tarfile reads a chain of them recursively)
MEMBER_OVERHEAD = 4 * 1024  # per member in the expanded stream: its headers and the padding of its data
_CHUNK = 1 << 20
_EXTENSIONS = {
    tarfile.GNUTYPE_LONGNAME: "a GNU long-name (L)",
    tarfile.GNUTYPE_LONGLINK: "a GNU long-link (K)",
    tarfile.XHDTYPE: "a PAX (x)",
    tarfile.SOLARIS_XHDTYPE: "a PAX (X)",
    tarfile.XGLTYPE: "a global PAX (g)",
}


UNREADABLE = "not a readable .tar.gz"


class ArchiveRefused(ValueError):
    """The archive is unreadable or crosses a bound; the message says which."""


@dataclass(frozen=True)
class TarBounds:
    what: str  # what the tarball is, in messages: "a module version"
    archive_max: int  # the compressed tarball
    files_max: int  # its members
    total_max: int  # uncompressed, all files
    file_max: int | None = None  # one file (None: only the total bounds it)


def expanded_limit(total_max: int, files_max: int) -> int:
    """The decompressed stream's cap for an archive of at most `files_max` members holding `total_max` bytes."""
    return total_max + files_max * MEMBER_OVERHEAD + 64 * 1024


class _Expanded:
    """The archive's decompressed bytes, as tarfile reads them: never more than `limit`, decompression errors
    refused, and no single read larger than what it asks (tarfile's own reads are bounded by the header checks)."""

    def __init__(self, source: IO[bytes], limit: int, gzipped: bool) -> None:
        self._raw: Any = gzip.GzipFile(fileobj=source, mode="rb") if gzipped else source
        self._limit, self._pos, self._work, self._back = limit, 0, 0, b""

    def read(self, size: int | None = -1) -> bytes:
        wanted = self._limit + 1 - self._pos if size is None or size < 0 else size
        data, self._back = self._back[:wanted], self._back[wanted:]
        if len(data) < wanted:
            data += self._guarded(lambda: self._raw.read(min(wanted - len(data), self._limit + 1 - self._pos)))
        self._pos += len(data)
        self._count(len(data))
        return data

    def peek(self, size: int) -> bytes:
        """The next `size` bytes, read again by the next read."""
        data = self.read(size)
        self._back, self._pos = data + self._back, self._pos - len(data)
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        target = offset if whence == io.SEEK_SET else self._pos + offset
        if whence not in (io.SEEK_SET, io.SEEK_CUR) or target < 0:
            raise ArchiveRefused("the archive is read out of order")
        if target > self._limit:
            raise ArchiveRefused(f"the archive expands to more than {self._limit} bytes")
        while self._pos < target:  # forward: read through, counted like any read
            if not self.read(min(_CHUNK, target - self._pos)):
                break
        if target < self._pos:  # backward: a compressed stream is read again from its start
            self._guarded(lambda: self._raw.seek(target))
            self._pos, self._back = target, b""
            self._count(target)
        return self._pos

    def tell(self) -> int:
        return self._pos

    def seekable(self) -> bool:
        return True

    def _count(self, read: int) -> None:
        self._work += read
        if self._pos > self._limit or self._work > 2 * self._limit:
            raise ArchiveRefused(f"the archive expands to more than {self._limit} bytes")

    @staticmethod
    def _guarded(step: Callable[[], Any]) -> Any:
        try:
            return step()
        except (EOFError, OSError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
            raise ArchiveRefused(f"{UNREADABLE}: {exc}") from exc


class _BoundedTarInfo(tarfile.TarInfo):
    """tarfile's header, checked before tarfile reads an extension header's payload."""

    def _proc_member(self, archive: Any) -> Any:
        if self.type == tarfile.GNUTYPE_SPARSE:
            raise ArchiveRefused(f"sparse member {self.name!r}: sparse files are not read")
        what = _EXTENSIONS.get(self.type)
        if what is None:
            return super()._proc_member(archive)  # type: ignore[misc]
        if self.size > EXTENSION_MAX:
            raise ArchiveRefused(f"{what} header of {self.size} bytes: at most {EXTENSION_MAX} are read")
        if self.type not in (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK):
            _check_records(archive.fileobj.peek(self.size), what)
        if self.type == tarfile.XGLTYPE:
            archive.global_bytes += self.size
            if archive.global_bytes > GLOBAL_MAX:
                raise ArchiveRefused(f"global PAX (g) headers of more than {GLOBAL_MAX} bytes in all")
        archive.chain += 1
        try:
            if archive.chain > CHAIN_MAX:
                raise ArchiveRefused(f"more than {CHAIN_MAX} extension headers before one member")
            return super()._proc_member(archive)  # type: ignore[misc]
        finally:
            archive.chain -= 1

    def _refuse_sparse(self, *args: Any) -> None:
        raise ArchiveRefused("a PAX sparse member: sparse files are not read")

    # tarfile reads a PAX sparse map (format 1.0) from the member's data, unbounded: every format is refused
    _proc_gnusparse_00 = _proc_gnusparse_01 = _proc_gnusparse_10 = _refuse_sparse


def _check_records(payload: bytes, what: str) -> None:
    """A PAX header's records as POSIX writes them (`<length> <keyword>=<value>\n`, the lengths tiling the payload)
    and no run of digits longer than `DIGITS_MAX`: the only shapes tarfile's regular expressions read in linear time
    (on others they took 7 s of CPU or 1 GiB of memory for 64 KiB, depending on the Python)."""
    if DIGIT_RUN.search(payload):
        raise ArchiveRefused(f"{what} header holding a run of more than {DIGITS_MAX} digits")
    pos = 0
    while pos < len(payload) and payload[pos]:
        match = RECORD.match(payload, pos)
        end = pos + int(match.group(1)) if match else 0
        if not match or end > len(payload) or payload[end - 1 : end] != b"\n" or match.end() > end:
            raise ArchiveRefused(f"{what} header whose records are not `<length> <keyword>=<value>` lines")
        pos = end
    if payload[pos:].strip(b"\0"):
        raise ArchiveRefused(f"{what} header with bytes after its records")


class _BoundedTarFile(tarfile.TarFile):
    tarinfo = _BoundedTarInfo
    chain = 0  # extension headers being read before the current member
    global_bytes = 0


class TarReader:
    """An open archive: its members one at a time (none retained) and a regular file's bytes in chunks."""

    def __init__(self, tar: tarfile.TarFile) -> None:
        self._tar = tar

    def __iter__(self) -> Iterator[tarfile.TarInfo]:
        while True:
            member = _read(self._tar.next)
            # tarfile keeps every member it read (and each one's PAX headers): hold only the current one
            self._tar.members.clear()  # type: ignore[attr-defined]
            if member is None:
                return
            yield member

    def chunks(self, member: tarfile.TarInfo) -> Iterator[bytes]:
        """A regular file member's bytes, at most 1 MiB at a time, read when asked."""
        if not member.isreg():
            raise ArchiveRefused(f"{member.name!r} is not a regular file")
        source = _read(lambda: self._tar.extractfile(member))
        if source is None:  # pragma: no cover - a regular file always has one
            raise ArchiveRefused(f"{member.name!r} is not a regular file")
        with source:
            while chunk := _read(lambda: source.read(_CHUNK)):
                yield chunk


def _read(step: Callable[[], Any]) -> Any:
    try:
        return step()
    except tarfile.TarError as exc:
        raise ArchiveRefused(f"{UNREADABLE}: {exc}") from exc


@contextmanager
def open_tar(source: IO[bytes], expanded_max: int, gzip_only: bool = False) -> Iterator[TarReader]:
    """The tar archive in `source` (gzipped, or plain unless `gzip_only`), read within the bounds above;
    ArchiveRefused naming the bound crossed or why it cannot be read."""
    magic = source.read(6)
    source.seek(0)
    gzipped = magic[:2] == b"\x1f\x8b"
    if not gzipped and (gzip_only or magic[:3] == b"BZh" or magic == b"\xfd7zXZ\x00"):
        why = "not gzip-compressed" if gzip_only else "gzip or no compression only"
        raise ArchiveRefused(f"{UNREADABLE}: {why}")
    stream = _Expanded(source, expanded_max, gzipped)
    tar = _read(lambda: _BoundedTarFile(fileobj=stream, mode="r"))  # type: ignore[arg-type]
    with tar:
        yield TarReader(tar)


def read_files(
    raw: bytes,
    bounds: TarBounds,
    root: str,
    wanted: Callable[[str], bool] = lambda name: True,
    mode: Literal["r:*", "r:gz"] = "r:*",
) -> dict[str, bytes]:
    """The regular files of `raw` whose normalized name `wanted` accepts, by name; Invalid naming the bound
    crossed or the member refused. Every member counts against the bounds, wanted or not."""
    if len(raw) > bounds.archive_max:
        raise Invalid(f"{bounds.what} is at most {bounds.archive_max} bytes compressed")
    files: dict[str, bytes] = {}
    total = 0
    try:
        limit = expanded_limit(bounds.total_max, bounds.files_max)
        with open_tar(io.BytesIO(raw), limit, gzip_only=mode == "r:gz") as tar:
            for count, member in enumerate(tar, start=1):
                if count > bounds.files_max:
                    raise Invalid(f"{bounds.what} has at most {bounds.files_max} files")
                try:
                    member = tarfile.data_filter(member, root)
                except tarfile.FilterError as exc:
                    raise Invalid(f"refused: {member.name}: {exc}") from exc
                if not member.isfile():
                    continue
                if bounds.file_max is not None and member.size > bounds.file_max:
                    raise Invalid(f"{member.name} is larger than {bounds.file_max} bytes")
                total += member.size
                if total > bounds.total_max:
                    raise Invalid(f"{bounds.what} holds at most {bounds.total_max} bytes uncompressed")
                name = posixpath.normpath(member.name)
                if wanted(name):
                    files[name] = b"".join(tar.chunks(member))
    except ArchiveRefused as exc:
        raise Invalid(str(exc)) from exc
    return files


class TarWriter:
    """A .tar.gz written member by member (what the package writes: a forge's commit made a configuration's
    archive, `services/vcs/archives.py`)."""

    def __init__(self, tar: tarfile.TarFile) -> None:
        self._tar = tar

    def add(self, name: str, data: bytes | None, mode: int = 0o644, mtime: float = 0) -> None:
        """A regular file (`data`), or a folder (None)."""
        info = tarfile.TarInfo(name)
        info.mode, info.mtime = mode, mtime
        if data is None:
            info.type = tarfile.DIRTYPE
        else:
            info.size = len(data)
        self._tar.addfile(info, io.BytesIO(data) if data is not None else None)


@contextmanager
def write_tar(out: IO[bytes]) -> Iterator[TarWriter]:
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        yield TarWriter(tar)
