"""A full disk under the embedded server: its data directory (the SQLite file, its WAL and the blob folder) on a
small tmpfs that the test fills.

Proves: state writes and locks meet a clear 507 (or 503) with a JSON:API error while the disk is full, never a
500 and never a half-written version (every acknowledged write listed and byte-identical); the server keeps
serving reads (the http backend's GET, the API's current version, its download); writes succeed again once space
is freed. Needs root (mount); skipped with the reason otherwise.
"""

from __future__ import annotations

import errno
import json
import os
import random
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import sized
from proof_stack import Client, check_states, md5_hex, running_stack, state_doc

pytestmark = [pytest.mark.proof, pytest.mark.timeout(sized(300, 1800))]
TMPFS_MB = 64  # the states the cycles keep (up to 1 MB each) fit, with room to spare once the filler goes


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "data"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={TMPFS_MB}m,mode=0700", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"mounting a {TMPFS_MB} MB tmpfs is not permitted here: {done.stderr.strip() or done.returncode}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path, leave: int) -> Path:
    """Fill `disk` to `leave` bytes short of full (0: full); returns the filler to delete."""
    filler = disk / f"filler-{uuid.uuid4().hex[:6]}"
    with filler.open("wb") as out:
        try:
            while True:
                out.write(b"\0" * (1 << 20))
                out.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    stat = os.statvfs(disk)
    free = stat.f_bavail * stat.f_frsize
    with filler.open("r+b") as out:  # give back `leave` bytes
        out.truncate(max(0, filler.stat().st_size + free - leave))
    return filler


def big_state(serial: int, lineage: str, size: int) -> bytes:
    doc = json.loads(state_doc(serial, lineage))
    doc["outputs"]["blob"] = {"value": os.urandom(size // 2).hex(), "type": "string"}
    return json.dumps(doc).encode()


def test_a_full_disk_refuses_writes_keeps_reads_and_recovers(
    small_disk: Path, proof_rng: random.Random, tmp_path: Path
) -> None:
    state_dir = tmp_path / "state"
    with running_stack("embedded", state_dir, data_dir=small_disk) as stack:
        client = Client(stack)
        try:
            name = f"full-{uuid.uuid4().hex[:6]}"
            workspace_id = client.create_workspace(name)
            url = f"/state/v1/{client.org}/{name}"
            lineage = str(uuid.uuid4())
            acknowledged: dict[int, bytes] = {}
            serial = 1
            assert (state := client.http_write(name, serial, lineage)) is not None
            acknowledged[serial] = state
            refusals: list[int] = []
            for _cycle in range(sized(2, 12)):
                serial += 1
                leave = proof_rng.choice([0, 4096, 64 * 1024])
                size = proof_rng.choice([2048, 256 * 1024, 1024 * 1024])
                state = big_state(serial, lineage, size) if size > 4096 else state_doc(serial, lineage)
                lock_id = str(uuid.uuid4())
                lock = json.dumps({"ID": lock_id, "Operation": "OperationTypeApply", "Who": "proof"})
                assert client.call("POST", url + "/lock", content=lock).status_code == 200
                filler = fill(small_disk, leave)
                try:
                    written = client.call("POST", url, params={"ID": lock_id}, content=state, retries=1)
                    if written.status_code == 200:  # what was left was enough for it
                        acknowledged[serial] = state
                    else:
                        refusals.append(written.status_code)
                        assert written.status_code in (503, 507), written.text
                        assert written.json()["errors"][0]["title"] in ("insufficient storage", "storage unavailable")
                    # reads keep being served
                    last = acknowledged[max(acknowledged)]
                    read = client.call("GET", url, follow_redirects=True)
                    assert read.status_code == 200 and md5_hex(read.content) == md5_hex(last), read.text
                    current = client.api("GET", f"/api/v2/workspaces/{workspace_id}/current-state-version")
                    assert current.json()["data"]["attributes"]["serial"] == max(acknowledged)
                finally:
                    filler.unlink()
                # space is back: the same write goes through, the lock is released
                if serial not in acknowledged:
                    again = client.call("POST", url, params={"ID": lock_id}, content=state)
                    assert again.status_code == 200, again.text
                    acknowledged[serial] = state
                assert client.call("DELETE", url + "/lock", content=lock).status_code == 200
            checked = check_states(client, workspace_id, acknowledged)
            print(f"\nfull disk: {checked} refusals={refusals} statuses={dict(client.statuses)}")
            assert refusals, "the full disk never refused a write"
        finally:
            client.close()
