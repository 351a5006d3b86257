"""`terrace backup` while the embedded server writes: the copy is a consistent database (SQLite's online backup)
with every blob it names, and a server started on the copy serves the same state."""

from __future__ import annotations

import sqlite3
import ssl
import threading
from pathlib import Path

import httpx
from state_helpers import state_bytes
from terrace.cli import app
from terrace.local.stack import LocalStack
from typer.testing import CliRunner


def _client(stack: LocalStack) -> httpx.Client:
    assert stack.info is not None
    return httpx.Client(
        base_url=stack.info.url,
        verify=ssl.create_default_context(cafile=stack.info.ca_bundle),
        auth=("admin", stack.info.token),
        timeout=30,
    )


def test_a_backup_taken_while_writing_serves_the_same_state(tmp_path: Path) -> None:
    data = tmp_path / "data"
    stack = LocalStack(port=0, organization="bk", state_dir=data, data_dir=data, workers=False)
    stack.start()
    written: list[str] = []
    stop = threading.Event()
    try:
        with _client(stack) as http:
            assert http.post("/state/v1/bk/kept", content=state_bytes(1)).status_code == 200
            kept = http.get("/state/v1/bk/kept").content

            def writer() -> None:
                with _client(stack) as busy:
                    n = 0
                    while not stop.is_set():
                        n += 1
                        response = busy.post(f"/state/v1/bk/busy-{n}", content=state_bytes(1))
                        assert response.status_code == 200, response.text
                        written.append(f"busy-{n}")

            thread = threading.Thread(target=writer)
            thread.start()
            try:
                while len(written) < 3:
                    stop.wait(0.05)
                result = CliRunner().invoke(app, ["backup", "--data", str(data), str(tmp_path / "copy")])
            finally:
                stop.set()
                thread.join()
        assert result.exit_code == 0, result.output
        assert "backed up" in result.output
    finally:
        stack.stop()

    copy = tmp_path / "copy"
    assert sqlite3.connect(copy / "terrace.db").execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert (copy / "master.key").stat().st_mode & 0o777 == 0o600
    again = LocalStack(port=0, organization="bk", state_dir=copy, data_dir=copy, workers=False)
    again.start()
    try:
        with _client(again) as http:
            assert http.get("/state/v1/bk/kept").content == kept
            copied = [name for name in written if http.get(f"/state/v1/bk/{name}").status_code == 200]
            assert copied == written[: len(copied)] and len(copied) >= 3  # a prefix: what was committed
    finally:
        again.stop()


def test_backup_refuses_a_folder_without_data_and_a_non_empty_target(tmp_path: Path) -> None:
    empty = CliRunner().invoke(app, ["backup", "--data", str(tmp_path / "nothing"), str(tmp_path / "out")])
    assert empty.exit_code == 1 and "no Terrace data" in empty.output
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "terrace.db").touch()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "x").touch()
    busy = CliRunner().invoke(app, ["backup", "--data", str(tmp_path / "data"), str(tmp_path / "out")])
    assert busy.exit_code == 1 and "not empty" in busy.output
