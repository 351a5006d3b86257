"""A forge's tarball of a commit made a configuration version's archive: read with the package's bounded reader
(`domain/bounded_tar.py: open_tar`: each header checked before its payload, the expanded stream capped) under the
bounds below, each member through tarfile's `data` filter (absolute paths, `..`, links leading out and special
files refuse the whole archive), and written again without the forge's top-level folder (`owner-repo-sha/`), so the
workspace's working directory is relative to the repository's root. Spooled to disk past 8 MiB."""

from __future__ import annotations

import io
import posixpath
import tarfile
import tempfile
from dataclasses import dataclass

from terrace.domain.bounded_tar import ArchiveRefused, expanded_limit, open_tar, write_tar
from terrace.domain.errors import Invalid

SPOOL_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class RepoBounds:
    archive_max: int  # the forge's tarball, compressed
    files_max: int = 20_000
    total_max: int = 256 * 1024 * 1024  # expanded, all files


def repacked(raw: bytes, bounds: RepoBounds, folder: str = "") -> bytes:
    """The tarball's files under the repository's root (or only those below `folder`, relative to it: a policy set's
    `policies-path`), as a new .tar.gz; Invalid naming what was refused."""
    below = f"{folder.strip('/')}/" if folder.strip("/") else ""
    if len(raw) > bounds.archive_max:
        raise Invalid(f"the repository's archive is larger than {bounds.archive_max} bytes")
    total = 0
    with tempfile.SpooledTemporaryFile(SPOOL_BYTES) as out:
        try:
            with (
                open_tar(io.BytesIO(raw), expanded_limit(bounds.total_max, bounds.files_max)) as tar,
                write_tar(out) as packed,
            ):
                for count, member in enumerate(tar, start=1):
                    if count > bounds.files_max:
                        raise Invalid(f"the repository holds more than {bounds.files_max} files")
                    try:
                        member = tarfile.data_filter(member, "/nonexistent-root")
                    except tarfile.FilterError as exc:
                        raise Invalid(f"the repository's archive was refused: {member.name}: {exc}") from exc
                    name = _below_top(member.name)
                    if name is None or not (member.isfile() or member.isdir()) or not name.startswith(below):
                        continue  # the top folder itself, GitHub's pax comment; links within are dropped
                    name = name[len(below) :]
                    if not name:
                        continue
                    total += member.size
                    if total > bounds.total_max:
                        raise Invalid(f"the repository holds more than {bounds.total_max} bytes")
                    data = b"".join(tar.chunks(member)) if member.isfile() else None
                    packed.add(name, data, member.mode or 0o644, member.mtime)
        except ArchiveRefused as exc:
            raise Invalid(f"the repository's archive was refused: {exc}") from exc
        out.seek(0)
        return out.read()


def _below_top(name: str) -> str | None:
    """`top/path` -> `path`; None for the top folder itself or a member outside one."""
    top, _, rest = posixpath.normpath(name).partition("/")
    return rest or None if top not in ("", ".", "..") else None
