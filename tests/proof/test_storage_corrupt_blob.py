"""A damaged state blob: bytes flipped in a stored state version's object, on disk under the embedded server
(size and modification time kept, as bit rot leaves them) or in moto's S3.

Proves: no read serves the damaged bytes as good state: the http backend's GET answers 409 with a JSON error
naming the md5 mismatch, the embedded server's download URL 409 too (on S3 the object is S3's to keep whole: the
listed md5 lets a client check what it got); every other version and workspace reads back byte-identical; a new
write over the damaged version succeeds and is served.
"""

from __future__ import annotations

import os
import random
import uuid
from pathlib import Path
from typing import Any

import pytest
from conftest import sized
from proof_stack import Client, check_states, md5_hex, running_stack
from terrace.local.stack import LocalStack

pytestmark = [pytest.mark.proof, pytest.mark.timeout(sized(300, 1800))]


def flip(stack: LocalStack, blob_key: str, rng: random.Random) -> None:
    """Flip a few bytes of the object at `blob_key`, where its store keeps it."""
    container = stack.container
    if stack.backend == "embedded":
        path = container.blobs.path_of(blob_key)
        stat = path.stat()
        data = bytearray(path.read_bytes())
        for _ in range(rng.randint(1, 3)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        path.write_bytes(bytes(data))
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        return
    from moto.s3.models import s3_backends

    bucket = next(
        b
        for backend in s3_backends.values()
        for r in backend.values()
        for n, b in r.buckets.items()
        if n == container.settings.blob_bucket
    )
    for key in bucket.keys.getlist(blob_key):  # every version of it
        data = bytearray(key.value)
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        key.value = bytes(data)


@pytest.mark.parametrize("backend", ["embedded", "moto"])
def test_a_damaged_state_blob_is_never_served_as_good(backend: str, proof_rng: random.Random, tmp_path: Path) -> None:
    if backend == "moto" and sized(0, 1) == 0:
        pytest.skip("moto's S3 in make proof only (TERRACE_PROOF=full): make test keeps the embedded case")
    with running_stack(backend, tmp_path) as stack:
        client = Client(stack)
        try:
            workspaces: dict[str, tuple[str, dict[int, bytes]]] = {}
            for _ in range(sized(2, 6)):
                name = f"rot-{uuid.uuid4().hex[:6]}"
                ws_id = client.create_workspace(name)
                lineage = str(uuid.uuid4())
                written = {s: client.http_write(name, s, lineage) for s in range(1, proof_rng.randint(2, 4) + 1)}
                assert all(written.values())
                workspaces[name] = (ws_id, {s: w for s, w in written.items() if w is not None})
            damaged_name = proof_rng.choice(sorted(workspaces))
            ws_id, acknowledged = workspaces[damaged_name]
            versions = client.versions(ws_id)
            current = max(versions, key=lambda v: v["attributes"]["serial"])
            sv_id = current["id"]
            record: Any = stack.container.state_versions._find(sv_id)
            flip(stack, record.blob_key, proof_rng)

            read = client.call("GET", f"/state/v1/{client.org}/{damaged_name}", follow_redirects=True)
            assert read.status_code == 409, read.text
            assert "does not match" in read.json()["detail"]
            downloaded = client.download(current["attributes"]["hosted-state-download-url"])
            if backend == "embedded":
                assert downloaded.status_code == 409, downloaded.text
            else:  # S3's own object: the listed md5 tells the client it is not the version
                assert md5_hex(downloaded.content) != current["attributes"]["md5"]

            for name, (other_id, other_acknowledged) in workspaces.items():
                if name != damaged_name:
                    check_states(client, other_id, other_acknowledged)
            lineage = client.versions(ws_id)[0]["attributes"]["lineage"] or str(uuid.uuid4())
            serial = max(acknowledged) + 1
            state = client.http_write(damaged_name, serial, lineage)
            assert state is not None, "a write over the damaged version failed"
            read = client.call("GET", f"/state/v1/{client.org}/{damaged_name}", follow_redirects=True)
            assert read.status_code == 200 and read.content == state
            assert client.statuses[500] == 0, client.bodies_5xx
            print(f"\n{backend}: damaged {sv_id} of {len(workspaces)} workspaces; statuses={dict(client.statuses)}")
        finally:
            client.close()
