"""Configuration tarballs are extracted without anything landing outside the destination."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest
from terrace.runner.safe_tar import UnsafeArchive, extract, working_dir


def build(tmp_path: Path, entries: list[tarfile.TarInfo], data: dict[str, bytes] | None = None) -> Path:
    path = tmp_path / "config.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for info in entries:
            body = (data or {}).get(info.name)
            if body is not None:
                info.size = len(body)
            tar.addfile(info, io.BytesIO(body) if body is not None else None)
    return path


def file(name: str) -> tarfile.TarInfo:
    return tarfile.TarInfo(name)


def link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info


def special(name: str, kind: bytes) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    return info


def test_a_normal_archive_with_inner_links_extracts(tmp_path: Path) -> None:
    archive = build(
        tmp_path,
        [
            file("main.tf"),
            file("modules/m/main.tf"),
            link("modules/alias", "m"),
            link("copy.tf", "main.tf", tarfile.LNKTYPE),
            link("modules/m/up.tf", "../../main.tf"),
        ],
        {"main.tf": b"# main\n", "modules/m/main.tf": b"# m\n"},
    )
    dest = tmp_path / "out"
    assert extract(archive, dest) == 5
    assert (dest / "modules/alias/main.tf").read_text() == "# m\n"
    assert (dest / "copy.tf").read_text() == "# main\n" and not (dest / "copy.tf").is_symlink()
    assert (dest / "modules/m/up.tf").read_text() == "# main\n"


@pytest.mark.parametrize(
    ("entries", "reason"),
    [
        ([file("/etc/evil.tf")], "absolute path"),
        ([file("../evil.tf")], "'..'"),
        ([file("a/../../evil.tf")], "'..'"),
        ([link("evil", "/etc/passwd")], "absolute"),
        ([link("evil", "../../etc/passwd")], "outside"),
        ([link("a/evil", "../../x")], "outside"),
        # a symlinked folder that resolves shallower than it looks, then a `..` climbing from it
        ([link("up", "."), link("up/evil", "../x")], "outside"),
        ([link("d", "sub"), link("evil", "d/../../x")], "'..' after"),
        ([link("evil", "../outside.tf", tarfile.LNKTYPE)], "outside"),
        ([link("evil", "/etc/passwd", tarfile.LNKTYPE)], "absolute"),
        ([special("dev", tarfile.CHRTYPE)], "unsupported"),
        ([special("blk", tarfile.BLKTYPE)], "unsupported"),
        ([special("fifo", tarfile.FIFOTYPE)], "unsupported"),
    ],
    ids=[
        "abs",
        "dotdot",
        "inner-dotdot",
        "symlink-abs",
        "symlink-up",
        "symlink-nested-up",
        "symlink-chain",
        "symlink-dotdot-after-name",
        "hardlink-up",
        "hardlink-abs",
        "chardev",
        "blockdev",
        "fifo",
    ],
)
def test_unsafe_entries_are_rejected(tmp_path: Path, entries: list[tarfile.TarInfo], reason: str) -> None:
    archive = build(tmp_path, entries)
    dest = tmp_path / "a" / "b" / "out"
    with pytest.raises(UnsafeArchive, match=reason):
        extract(archive, dest)
    assert not (tmp_path / "a" / "b" / "x").exists() and not (tmp_path / "a" / "evil.tf").exists()


def test_entry_and_size_limits(tmp_path: Path) -> None:
    archive = build(tmp_path, [file(f"f{i}.tf") for i in range(5)], {f"f{i}.tf": b"x" * 10 for i in range(5)})
    with pytest.raises(UnsafeArchive, match="more than 3 entries"):
        extract(archive, tmp_path / "o1", max_entries=3)
    with pytest.raises(UnsafeArchive, match="more than 25 bytes"):
        extract(archive, tmp_path / "o2", max_bytes=25)


def test_garbage_is_not_an_archive(tmp_path: Path) -> None:
    path = tmp_path / "x.tar.gz"
    path.write_bytes(b"not a tarball")
    with pytest.raises(UnsafeArchive, match=r"not a readable \.tar\.gz"):
        extract(path, tmp_path / "out")


def test_working_directory_must_stay_inside(tmp_path: Path) -> None:
    (tmp_path / "root" / "infra").mkdir(parents=True)
    root = tmp_path / "root"
    assert working_dir(root, "infra") == (root / "infra").resolve()
    assert working_dir(root, "") == root.resolve()
    with pytest.raises(UnsafeArchive):
        working_dir(root, "../")
    with pytest.raises(UnsafeArchive):
        working_dir(root, "/etc")
    with pytest.raises(UnsafeArchive, match="does not exist"):
        working_dir(root, "missing")


class _Zeros(io.RawIOBase):
    """`size` zero bytes, read in chunks: a decompression bomb's body without holding it in memory."""

    def __init__(self, size: int) -> None:
        self.left = size

    def read(self, size: int = -1) -> bytes:
        n = self.left if size < 0 else min(size, self.left)
        self.left -= n
        return bytes(n)


def _bomb(tmp_path: Path, files: int, each: int) -> Path:
    path = tmp_path / "bomb.tar.gz"
    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        for i in range(files):
            info = tarfile.TarInfo(f"f{i}.tf")
            info.size = each
            tar.addfile(info, _Zeros(each))
    return path


def test_a_small_archive_expanding_past_the_default_limit_is_refused_before_it_fills_the_disk(tmp_path: Path) -> None:
    archive = _bomb(tmp_path, files=1, each=1024 * 1024 * 1024)
    assert archive.stat().st_size < 8 * 1024 * 1024  # a few MB of gzip that would expand to 1 GiB
    with pytest.raises(UnsafeArchive, match=f"more than {512 * 1024 * 1024} bytes"):
        extract(archive, tmp_path / "out")
    assert sum(p.stat().st_size for p in (tmp_path / "out").rglob("*") if p.is_file()) == 0


def test_the_expanded_size_is_counted_across_files_and_nothing_past_the_limit_is_written(tmp_path: Path) -> None:
    archive = _bomb(tmp_path, files=8, each=1024 * 1024)
    with pytest.raises(UnsafeArchive, match="more than 3145728 bytes"):
        extract(archive, tmp_path / "out", max_bytes=3 * 1024 * 1024)
    assert sum(p.stat().st_size for p in (tmp_path / "out").rglob("*") if p.is_file()) <= 3 * 1024 * 1024


def test_the_expansion_limit_is_a_runner_setting() -> None:
    from terrace.runner.config import RunnerConfig

    env = {"TERRACE_API_URL": "https://x", "TERRACE_RUNNER_TOKEN": "s"}
    assert RunnerConfig.from_env(env).max_config_expanded_bytes == 512 * 1024 * 1024
    env["TERRACE_RUNNER_MAX_CONFIG_EXPANDED_BYTES"] = "1000"
    assert RunnerConfig.from_env(env).max_config_expanded_bytes == 1000


@pytest.mark.parametrize(
    "entries",
    [
        # the link is checked while `d` is no link yet; `d` made a link later must not let it climb out
        [link("evil", "d/../x"), link("d", ".")],
        [link("up/evil", "../x"), link("up", ".")],
        [link("d", "."), link("d/d2", "."), link("d/d2/evil", "../../x")],
    ],
    ids=["dotdot-through-a-later-link", "name-through-a-later-link", "chained-links"],
)
def test_links_cannot_escape_whatever_order_they_come_in(tmp_path: Path, entries: list[tarfile.TarInfo]) -> None:
    archive = build(tmp_path, entries)
    with pytest.raises(UnsafeArchive, match="outside|'..' after|replace a folder"):
        extract(archive, tmp_path / "a" / "b" / "out")
    assert not (tmp_path / "a" / "b" / "x").exists()


def test_special_bits_and_ownership_are_dropped(tmp_path: Path) -> None:
    entry = file("run.sh")
    entry.mode, entry.uid, entry.gid = 0o6777, 0, 0
    dest = tmp_path / "out"
    extract(build(tmp_path, [entry], {"run.sh": b"#!/bin/sh\n"}), dest)
    assert (dest / "run.sh").stat().st_mode & 0o7777 == 0o755


def test_it_refuses_to_extract_into_a_link(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "out").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UnsafeArchive, match="destination is a link"):
        extract(build(tmp_path, [file("main.tf")], {"main.tf": b"#\n"}), tmp_path / "out")
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_a_file_over_a_folder_is_an_unsafe_archive(tmp_path: Path) -> None:
    folder = tarfile.TarInfo("modules/")
    folder.type = tarfile.DIRTYPE
    with pytest.raises(UnsafeArchive, match="would replace a folder"):
        extract(build(tmp_path, [folder, file("modules")], {"modules": b"x"}), tmp_path / "out")
