"""S3Blobs against a moto server: put/get/head, presigned PUT and GET over real HTTP, ETag == MD5."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import pytest
import requests
from aws import clients, create_table_and_bucket, moto_server
from terrace.adapters.s3_blobs import S3Blobs


@pytest.fixture(scope="module")
def blobs() -> Iterator[S3Blobs]:
    with moto_server() as url:
        made = clients(url)
        yield S3Blobs(made["s3"], create_table_and_bucket(made).bucket)


def test_put_get_head_copy_delete(blobs: S3Blobs) -> None:
    data = b'{"serial": 1}' * 1000
    blobs.put("state/ws/sv.tfstate", data)
    assert blobs.get("state/ws/sv.tfstate") == data
    assert b"".join(blobs.iter_chunks("state/ws/sv.tfstate", 1000)) == data
    info = blobs.head("state/ws/sv.tfstate")
    assert info is not None and info.size == len(data) and info.etag == hashlib.md5(data).hexdigest()
    blobs.copy("state/ws/sv.tfstate", "state/ws/copy.tfstate")
    assert blobs.get("state/ws/copy.tfstate") == data
    blobs.delete("state/ws/copy.tfstate")
    assert blobs.head("state/ws/copy.tfstate") is None
    with pytest.raises(KeyError):
        blobs.get("state/ws/copy.tfstate")


def test_presigned_put_then_get_over_http(blobs: S3Blobs) -> None:
    data = b'{"version": 4, "serial": 2}'
    put_url = blobs.presign_put("state/ws/upload.tfstate", 60)
    r = requests.put(put_url, data=data, headers={"Content-Type": "application/octet-stream"}, timeout=10)
    assert r.status_code == 200, r.text
    info = blobs.head("state/ws/upload.tfstate")
    assert info is not None and info.etag == hashlib.md5(data).hexdigest()
    got = requests.get(blobs.presign_get("state/ws/upload.tfstate", 60), timeout=10)
    assert got.status_code == 200 and got.content == data
    assert "Signature" in put_url or "X-Amz-Signature" in put_url


def test_an_exclusive_upload_url_creates_its_object_once(blobs: S3Blobs) -> None:
    """The runner's plan URLs: `If-None-Match: *` is signed in; S3 refuses (412) a second upload of the key."""
    url = blobs.presign_put("plans/run-x/plan.bin", 60, exclusive=True)
    assert "if-none-match" in url.lower()  # a signed header: a PUT without it does not match the signature on S3
    headers = {"Content-Type": "application/octet-stream", "If-None-Match": "*"}
    assert requests.put(url, data=b"the plan", headers=headers, timeout=10).status_code == 200
    replay = requests.put(url, data=b"a swapped plan", headers=headers, timeout=10)
    assert replay.status_code == 412, replay.text
    assert blobs.get("plans/run-x/plan.bin") == b"the plan"


def test_a_head_names_the_object_version_and_reads_can_pin_it(blobs: S3Blobs) -> None:
    blobs.put("state/ws/pinned.tfstate", b"first")
    info = blobs.head("state/ws/pinned.tfstate")
    assert info is not None and info.version  # the blob bucket is versioned
    blobs.put("state/ws/pinned.tfstate", b"written over")
    assert blobs.get("state/ws/pinned.tfstate", info.version) == b"first"
    assert b"".join(blobs.iter_chunks("state/ws/pinned.tfstate", version=info.version)) == b"first"
    got = requests.get(blobs.presign_get("state/ws/pinned.tfstate", 60, info.version), timeout=10)
    assert got.status_code == 200 and got.content == b"first"
    assert blobs.get("state/ws/pinned.tfstate") == b"written over"
