"""The zip reader of release archives (`domain/bounded_zip.py`) refuses before it allocates: too many entries, a
member declaring more than the bound, a member that expands beyond it, a missing member, a file that is no zip."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from terrace.domain.bounded_tar import ArchiveRefused
from terrace.domain.bounded_zip import ENTRIES_MAX, extract_member


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zipped:
        for name, data in members.items():
            zipped.writestr(name, data)
    return path


def test_the_member_asked_for_is_extracted(tmp_path: Path) -> None:
    out = io.BytesIO()
    archive = _zip(tmp_path / "a.zip", {"terraform": b"binary", "LICENSE.txt": b"text"})
    assert extract_member(archive, "terraform", out, archive_max=1 << 20, member_max=16) == 6
    assert out.getvalue() == b"binary"


@pytest.mark.parametrize(
    ("members", "reason"),
    [
        ({f"f{n}": b"" for n in range(ENTRIES_MAX + 1)}, f"entries, above the bound of {ENTRIES_MAX}"),
        ({"terraform": b"\0" * 4096}, "declares 4096 bytes, above the bound of 1024"),
        ({"LICENSE.txt": b""}, "holds no 'terraform'"),
    ],
)
def test_a_zip_crossing_a_bound_is_refused(tmp_path: Path, members: dict[str, bytes], reason: str) -> None:
    with pytest.raises(ArchiveRefused, match=reason):
        extract_member(
            _zip(tmp_path / "a.zip", members), "terraform", io.BytesIO(), archive_max=1 << 20, member_max=1024
        )


def test_a_member_lying_about_its_size_stops_at_the_bound(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "a.zip", {"terraform": b"\0" * 4096})
    data = bytearray(archive.read_bytes())
    for header in (b"PK\x03\x04", b"PK\x01\x02"):  # the local and central headers: declare 100 bytes
        at = data.index(header)
        size_at = at + (22 if header == b"PK\x03\x04" else 24)
        data[size_at : size_at + 4] = (100).to_bytes(4, "little")
    archive.write_bytes(bytes(data))
    out = io.BytesIO()
    with pytest.raises(ArchiveRefused):
        extract_member(archive, "terraform", out, archive_max=1 << 20, member_max=1024)
    assert len(out.getvalue()) <= 1024


def test_a_file_that_is_no_zip_or_too_large_is_refused(tmp_path: Path) -> None:
    junk = tmp_path / "junk.zip"
    junk.write_bytes(b"not a zip")
    with pytest.raises(ArchiveRefused, match="not a readable zip"):
        extract_member(junk, "terraform", io.BytesIO(), archive_max=1 << 20, member_max=1024)
    with pytest.raises(ArchiveRefused, match="above the bound of 4"):
        extract_member(junk, "terraform", io.BytesIO(), archive_max=4, member_max=1024)
