"""A process killed while it writes a blob (SIGKILL of the embedded server mid-upload) leaves its temporary file
behind; the next opening of the store removes it, and never a file a live writer holds (issue 30's kill proof)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from terrace.adapters.fs_blob_urls import UrlSigner
from terrace.adapters.fs_blobs import FsBlobs

WRITER = textwrap.dedent(
    """
    import sys, time
    from terrace.adapters.fs_blob_urls import UrlSigner
    from terrace.adapters.fs_blobs import FsBlobs
    blobs = FsBlobs(sys.argv[1], UrlSigner("s", "https://x"), max_put_bytes=0)
    writer = blobs.open_writer("states/half", None)
    writer.write(b"x" * 4096)
    print("writing", flush=True)
    time.sleep(600)
    """
)


def _store(root: Path) -> FsBlobs:
    return FsBlobs(root, UrlSigner("secret", "https://terrace.test"), max_put_bytes=1024)


def test_a_killed_writers_temporary_file_is_removed_when_the_store_opens_again(tmp_path: Path) -> None:
    process = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "writing"
        assert len(list((tmp_path / "tmp").iterdir())) == 1
        assert _store(tmp_path).sweep_abandoned() == []  # alive: its file is kept
        assert len(list((tmp_path / "tmp").iterdir())) == 1
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
        assert process.stdout is not None
        process.stdout.close()

    blobs = _store(tmp_path)  # the restarted server opens the store

    assert list((tmp_path / "tmp").iterdir()) == []
    assert blobs.head("states/half") is None


def test_a_writer_in_this_process_keeps_its_file_through_a_sweep_and_installs_it(tmp_path: Path) -> None:
    blobs = _store(tmp_path)
    writer = blobs.open_writer("states/whole", None)
    writer.write(b"state")

    assert blobs.sweep_abandoned() == []
    _store(tmp_path)  # another opening of the same folder (a CLI command beside the server)
    writer.commit()

    assert blobs.get("states/whole") == b"state"
    assert list((tmp_path / "tmp").iterdir()) == []
