"""The zip reader of release archives (`domain/bounded_zip.py`) refuses before it allocates: too many entries, a
member declaring more than the bound, a member that expands beyond it, a missing member, a file that is no zip. A
forge's zip of a commit (`zip_as_tar`, Azure DevOps' items download) becomes a .tar.gz of one top-level folder under
the same kind of bounds, and refuses names leading out and links."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import pytest
from terrace.domain.bounded_tar import ArchiveRefused
from terrace.domain.bounded_zip import ENTRIES_MAX, extract_member, zip_as_tar


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


def _zip_bytes(members: dict[str, bytes], links: tuple[str, ...] = ()) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zipped:
        for name, data in members.items():
            zipped.writestr(name, data)
        for name in links:
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o120777 << 16  # a symbolic link, as zip tools record one
            zipped.writestr(info, "/etc/passwd")
    return out.getvalue()


def test_a_forge_s_zip_becomes_a_tar_of_one_top_folder() -> None:
    raw = _zip_bytes({"main.tf": b"# x\n", "env/prod/main.tf": b"# p\n", "env/": b""})
    packed = zip_as_tar(raw, "infra-abc", entries_max=10, expanded_max=1024)
    with tarfile.open(fileobj=io.BytesIO(packed)) as tar:  # the test reads what it made
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]
    assert files == {"infra-abc/main.tf": b"# x\n", "infra-abc/env/prod/main.tf": b"# p\n"}


@pytest.mark.parametrize(
    ("members", "links", "reason"),
    [
        ({f"f{n}": b"" for n in range(11)}, (), "11 entries, above the bound of 10"),
        ({"big": b"\0" * 2048}, (), "declares more than 1024 bytes"),
        ({"../escape.tf": b"x"}, (), "leads out of the archive"),
        ({"/etc/cron.d/x": b"x"}, (), "leads out of the archive"),
        ({"main.tf": b"x"}, ("link.tf",), "is a link"),
    ],
)
def test_a_forge_s_zip_crossing_a_bound_or_leading_out_is_refused(
    members: dict[str, bytes], links: tuple[str, ...], reason: str
) -> None:
    with pytest.raises(ArchiveRefused, match=reason):
        zip_as_tar(_zip_bytes(members, links), "top", entries_max=10, expanded_max=1024)


def test_a_forge_s_zip_lying_about_its_size_stops_at_the_bound() -> None:
    data = bytearray(_zip_bytes({"main.tf": b"\0" * 4096}))
    for header in (b"PK\x03\x04", b"PK\x01\x02"):  # declare 100 bytes where 4096 expand
        at = data.index(header)
        size_at = at + (22 if header == b"PK\x03\x04" else 24)
        data[size_at : size_at + 4] = (100).to_bytes(4, "little")
    with pytest.raises(ArchiveRefused):
        zip_as_tar(bytes(data), "top", entries_max=10, expanded_max=1024)
    with pytest.raises(ArchiveRefused, match="not a readable zip"):
        zip_as_tar(b"not a zip", "top", entries_max=10, expanded_max=1024)
