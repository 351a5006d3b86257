"""Reading an uploaded tarball's files in memory, within bounds, never writing to disk: what the private registry
(module versions) and policy as code (policy set versions) both receive.

Each member passes tarfile's `data` filter against a notional root (absolute paths, `..` escapes, links leading
outside and special files refuse the whole tarball), then its regular files are read within the bounds given: the
compressed size, the number of members, each file's size and the uncompressed total.
"""

from __future__ import annotations

import io
import posixpath
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from terrace.domain.errors import Invalid


@dataclass(frozen=True)
class TarBounds:
    what: str  # what the tarball is, in messages: "a module version"
    archive_max: int  # the compressed tarball
    files_max: int  # its members
    total_max: int  # uncompressed, all files
    file_max: int | None = None  # one file (None: only the total bounds it)


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
        with tarfile.open(fileobj=io.BytesIO(raw), mode=mode) as tar:
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
                if not wanted(name):
                    continue
                extracted = tar.extractfile(member)
                files[name] = extracted.read(member.size) if extracted else b""
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise Invalid(f"not a readable .tar.gz: {exc}") from exc
    return files
