"""Every archive reader is bounded before it allocates (`domain/bounded_tar.py`'s `open_tar`): an extension header
(GNU long name or link, PAX) announcing 400 MB, a sparse member, a chain of headers or a gzip bomb is refused with
a message, its read measured in a process of its own whose address space is capped (`archive_probe.py`); long
names written either way still read."""

from __future__ import annotations

import bz2
import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from tar_bombs import ANNOUNCED, MAIN_TF, MIB, bomb, header, long_names, plain_gz, regular
from terrace.domain.bounded_tar import GLOBAL_MAX, ArchiveRefused, TarBounds, open_tar, read_files
from terrace.domain.errors import Invalid
from terrace.runner.safe_tar import extract

KINDS = {b"L": "GNU long-name (L)", b"K": "GNU long-link (K)", b"x": "PAX (x)", b"g": "global PAX (g)"}
SMALL = TarBounds("a test archive", 1 * MIB, files_max=10, total_max=1 * MIB)
PEAK_MAX = 4 * MIB  # what one refused read may trace; the legitimate reads below trace ~1 MB (the module's ~17: HCL)


def _probe(reader: str, archives: list[Path]) -> list[dict[str, object]]:
    probe = Path(__file__).with_name("archive_probe.py")
    done = subprocess.run(
        [sys.executable, str(probe), reader, "256", *map(str, archives)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.mark.parametrize("reader", ["module", "policy", "runner"])
def test_a_huge_extension_header_is_refused_in_little_memory_and_long_names_still_read(
    reader: str, tmp_path: Path
) -> None:
    archives = []
    for kind in KINDS:
        archives.append(tmp_path / f"{kind.decode()}.tar.gz")
        archives[-1].write_bytes(bomb(kind))  # 400 MiB announced and present: ~400 KB
    for fmt in (tarfile.GNU_FORMAT, tarfile.PAX_FORMAT):
        archives.append(tmp_path / f"long-{fmt}.tar.gz")
        archives[-1].write_bytes(long_names(fmt)[0])
    outcomes = _probe(reader, archives)
    for (kind, what), outcome in zip(KINDS.items(), outcomes, strict=False):
        assert outcome["outcome"] == "refused", (kind, outcome)
        assert f"{what} header of {ANNOUNCED} bytes" in str(outcome["message"]), outcome
        assert int(str(outcome["peak"])) < PEAK_MAX, (kind, outcome)
    assert [o["outcome"] for o in outcomes[len(KINDS) :]] == ["read", "read"], outcomes


def test_long_names_and_links_in_either_format_are_read_as_written(tmp_path: Path) -> None:
    for fmt in (tarfile.GNU_FORMAT, tarfile.PAX_FORMAT):
        raw, name = long_names(fmt)
        assert read_files(raw, SMALL, "/root") == {"main.tf": MAIN_TF, name: MAIN_TF}
        (tmp_path / "in.tar.gz").write_bytes(raw)
        assert extract(tmp_path / "in.tar.gz", tmp_path / str(fmt)) == 2
        assert (tmp_path / str(fmt) / name).read_bytes() == MAIN_TF
    buffer = io.BytesIO()  # a long name and a long link target before one member: a chain of two headers
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.GNU_FORMAT) as tar:
        link = tarfile.TarInfo("l" * 150)
        link.type, link.linkname = tarfile.SYMTYPE, "t" * 150
        tar.addfile(link)
    (tmp_path / "link.tar.gz").write_bytes(buffer.getvalue())
    extract(tmp_path / "link.tar.gz", tmp_path / "link")
    assert (tmp_path / "link" / ("l" * 150)).readlink() == Path("t" * 150)


def _refused(raw: bytes, message: str, bounds: TarBounds = SMALL) -> None:
    with pytest.raises(Invalid, match=message):
        read_files(raw, bounds, "/root")


def test_sparse_members_chains_and_global_headers_are_refused() -> None:
    sparse = header("holes.tf", tarfile.GNUTYPE_SPARSE, 0)
    _refused(plain_gz(sparse), "sparse files are not read")
    pax = b"".join(  # a PAX sparse map (format 1.0): tarfile reads it from the member's data, unbounded
        _record(key, value) for key, value in (("GNU.sparse.major", "1"), ("GNU.sparse.minor", "0"))
    )
    tail = regular("holes.tf", b"999999999999\n")
    _refused(plain_gz(header("pax", tarfile.XHDTYPE, len(pax)) + _pad(pax) + tail), "PAX sparse member")
    long = _pad(b"n" * 200)
    chain = b"".join(header("././@LongLink", tarfile.GNUTYPE_LONGNAME, 200) + long for _ in range(9))
    _refused(plain_gz(chain + regular("main.tf", MAIN_TF)), "more than 8 extension headers")
    comment = _record("comment", "c" * 1000)
    globals_ = b"".join(
        header("g", tarfile.XGLTYPE, len(comment)) + _pad(comment) for _ in range(GLOBAL_MAX // 1000 + 1)
    )
    _refused(plain_gz(globals_ + regular("main.tf", MAIN_TF)), "global PAX")
    one = header("g", tarfile.XGLTYPE, len(comment)) + _pad(comment)  # `git archive` writes one, with its commit
    assert read_files(plain_gz(one + regular("main.tf", MAIN_TF)), SMALL, "/root") == {"main.tf": MAIN_TF}


def _record(key: str, value: str) -> bytes:
    body = f" {key}={value}\n"
    length = len(body) + len(str(len(body)))
    length = len(body) + len(str(length))
    return f"{length}{body}".encode()


def _pad(data: bytes) -> bytes:
    return data + bytes(-len(data) % 512)


def test_a_gzip_bomb_stops_at_the_expanded_bound() -> None:
    """Defence in depth: the readers also bound what they read by the members' declared sizes, and refuse the types
    tarfile would skip unread; `open_tar`'s stream itself stops at its bound, whatever the headers say."""
    skipped = bomb(b"Z", then=regular("main.tf", MAIN_TF))  # 400 MiB of a type tarfile skips without reading
    with (
        pytest.raises(ArchiveRefused, match="expands to more than 1048576 bytes"),
        open_tar(io.BytesIO(skipped), MIB) as tar,
    ):
        assert [m.name for m in tar] == ["never"]
    with open_tar(io.BytesIO(plain_gz(regular("main.tf", MAIN_TF))), MIB) as tar:
        assert [b"".join(tar.chunks(m)) for m in tar] == [MAIN_TF]


def test_only_gzip_or_plain_tar_is_read() -> None:
    plain = regular("main.tf", MAIN_TF) + bytes(1024)
    assert read_files(plain, SMALL, "/root") == {"main.tf": MAIN_TF}
    with pytest.raises(Invalid, match="not gzip-compressed"):
        read_files(plain, SMALL, "/root", mode="r:gz")
    _refused(bz2.compress(plain), "gzip or no compression only")
    _refused(plain_gz(plain)[:-40], "not a readable .tar.gz")


def test_the_hooks_the_bounds_rely_on_are_tarfiles() -> None:
    """`open_tar` checks each header in `TarInfo._proc_member` (the dispatch point tarfile documents for subclasses)
    and refuses PAX sparse maps in `_proc_gnusparse_*`: a Python whose tarfile lost one fails here."""
    for name in ("_proc_member", "_proc_gnulong", "_proc_pax", "_proc_gnusparse_00", "_proc_gnusparse_01"):
        assert callable(getattr(tarfile.TarInfo, name, None)), name
    assert callable(getattr(tarfile.TarInfo, "_proc_gnusparse_10", None))


def test_pax_records_are_checked_before_tarfile_parses_them() -> None:
    """Shapes tarfile's own PAX parsing reads in quadratic time or memory (Python 3.11.7: 64 KiB of `2 2 2 ...=`
    held 1 GiB; 64 KiB of digits took 7 s) are refused; a value holding `=` and newlines is read."""
    for payload, message in (
        (b"2 " * 32767 + b"=\n", "records are not"),
        (b"1" * 65536, "run of more than 64 digits"),
        (_record("path", "main.tf") + b"junk", "records are not"),
    ):
        raw = plain_gz(header("pax", tarfile.XHDTYPE, len(payload)) + _pad(payload) + regular("main.tf", MAIN_TF))
        _refused(raw, message)
    comment = _record("comment", "x=y\n" * 100) + _record("path", "renamed.tf")
    raw = plain_gz(header("pax", tarfile.XHDTYPE, len(comment)) + _pad(comment) + regular("main.tf", MAIN_TF))
    assert read_files(raw, SMALL, "/root") == {"renamed.tf": MAIN_TF}
