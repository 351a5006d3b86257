"""The BlobStore port (`adapters/blobs.py`) on S3 (moto), the filesystem (embedded) and memory: bodies, MD5
ETags, ranges, copies, missing keys; presigned URLs used over HTTP as clients use them. The embedded server's
URLs are served by Terrace itself (`web/blob_urls.py`), which refuses expired, tampered, wrong-method and
too-large requests (moto does not check presigned signatures at all; S3 does)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from aws import clients, create_table_and_bucket
from fastapi.testclient import TestClient
from implementations import IMPLEMENTATIONS
from terrace.adapters.blobs import BlobStore
from terrace.adapters.memory_blobs import MemoryBlobs
from terrace.adapters.s3_blobs import S3Blobs
from terrace.bootstrap import build_embedded
from terrace.config import Settings
from terrace.web.app import create_app

MAX_PUT = 64 * 1024


@dataclass
class Store:
    kind: str
    blobs: BlobStore
    http: Any = None  # an httpx-like client that reaches the store's presigned URLs


def embedded_settings(data: Path) -> Settings:
    return Settings(
        table_name="embedded",
        blob_bucket="embedded",
        data_dir=str(data),
        public_url="https://testserver",
        url_signing_secret="contract-secret",
        max_config_bytes=MAX_PUT,
        max_inline_state_bytes=1024,
    )


@pytest.fixture(params=IMPLEMENTATIONS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "memory":
        yield Store("memory", MemoryBlobs())
    elif request.param == "sqlite":  # the embedded server: filesystem blobs served by the app
        container = build_embedded(embedded_settings(tmp_path / "data"))
        with TestClient(create_app(container)) as client:
            yield Store("fs", container.blobs, client)
        container.close()
    else:
        made = clients(request.getfixturevalue("moto_endpoint"))
        with httpx.Client() as client:
            yield Store("s3", S3Blobs(made["s3"], create_table_and_bucket(made).bucket), client)


def test_put_get_head_range_copy_delete(store: Store) -> None:
    blobs = store.blobs
    body = b"state body " * 1000
    blobs.put("state/ws-1/sv-1.tfstate", body, "application/json")
    assert blobs.get("state/ws-1/sv-1.tfstate") == body
    info = blobs.head("state/ws-1/sv-1.tfstate")
    assert info is not None and info.size == len(body) and info.etag == hashlib.md5(body).hexdigest()
    assert b"".join(blobs.iter_chunks("state/ws-1/sv-1.tfstate", chunk_size=4096)) == body
    assert blobs.get_range("state/ws-1/sv-1.tfstate", 6, 10) == body[6:10]
    assert blobs.get_range("state/ws-1/sv-1.tfstate", len(body) - 2, len(body) + 50) == body[-2:]
    assert blobs.get_range("state/ws-1/sv-1.tfstate", 5, 5) == b""
    blobs.copy("state/ws-1/sv-1.tfstate", "state/ws-1/sv-2.tfstate")
    blobs.put("state/ws-1/sv-1.tfstate", b"replaced")
    assert blobs.get("state/ws-1/sv-2.tfstate") == body and blobs.get("state/ws-1/sv-1.tfstate") == b"replaced"
    assert blobs.head("state/ws-1/sv-1.tfstate").etag == hashlib.md5(b"replaced").hexdigest()  # type: ignore[union-attr]
    blobs.delete("state/ws-1/sv-1.tfstate")
    blobs.delete("state/ws-1/never-there")
    assert blobs.head("state/ws-1/sv-1.tfstate") is None
    with pytest.raises(KeyError):
        blobs.get("state/ws-1/sv-1.tfstate")


def _needs_http(store: Store) -> None:
    if store.http is None:
        pytest.skip("the memory twin's URLs are not served over HTTP")


def test_presigned_put_then_get_over_http(store: Store) -> None:
    _needs_http(store)
    body = b"\x00config\xff" * 500
    put = store.http.put(store.blobs.presign_put("config/ws-1/cv-1.tar.gz", 60), content=body)
    assert put.status_code == 200
    assert store.blobs.head("config/ws-1/cv-1.tar.gz").etag == hashlib.md5(body).hexdigest()  # type: ignore[union-attr]
    got = store.http.get(store.blobs.presign_get("config/ws-1/cv-1.tar.gz", 60))
    assert got.status_code == 200 and got.content == body


def _needs_checked_urls(store: Store) -> None:
    _needs_http(store)
    if store.kind == "s3":
        pytest.skip("moto does not check presigned URLs (S3 refuses these with 403)")


def test_expired_tampered_and_wrong_method_urls_are_refused(store: Store) -> None:
    _needs_checked_urls(store)
    store.blobs.put("plans/run-1/plan.bin", b"plan")
    get_url = store.blobs.presign_get("plans/run-1/plan.bin", 60)
    put_url = store.blobs.presign_put("plans/run-1/plan.bin", 60)
    assert store.http.put(get_url, content=b"evil").status_code == 403  # a GET URL does not write
    assert store.http.get(put_url).status_code == 403  # a PUT URL does not read
    assert store.http.get(get_url.replace("plan.bin", "plan.json")).status_code == 403  # another key
    tampered = get_url[:-4] + ("0000" if not get_url.endswith("0000") else "1111")
    assert store.http.get(tampered).status_code == 403
    assert store.http.get(get_url.replace("expires=", "expires=9")).status_code == 403
    assert store.http.get(get_url.split("?")[0]).status_code == 403  # unsigned
    expired = store.blobs.presign_get("plans/run-1/plan.bin", -1)
    response = store.http.get(expired)
    assert response.status_code == 403 and "expired" in response.json()["errors"][0]["detail"]
    assert store.blobs.get("plans/run-1/plan.bin") == b"plan"


def test_a_put_past_the_size_limit_is_refused_and_writes_nothing(store: Store) -> None:
    _needs_checked_urls(store)
    url = store.blobs.presign_put("config/ws-1/cv-2.tar.gz", 60)
    assert store.http.put(url, content=b"x" * (MAX_PUT + 1)).status_code == 413

    def chunked() -> Iterator[bytes]:  # no Content-Length: counted as it streams
        for _ in range(MAX_PUT // 1024 + 2):
            yield b"y" * 1024

    assert store.http.put(url, content=chunked()).status_code == 413
    assert store.blobs.head("config/ws-1/cv-2.tar.gz") is None
    assert list((Path(store.blobs.root) / "tmp").iterdir()) == []  # type: ignore[attr-defined]
    assert store.http.put(url, content=b"x" * MAX_PUT).status_code == 200


def test_an_interrupted_write_leaves_the_previous_object_whole(store: Store) -> None:
    _needs_checked_urls(store)
    store.blobs.put("state/ws-1/sv-9.tfstate", b"old")

    def failing() -> Iterator[bytes]:
        yield b"new half"
        raise OSError("client went away")

    with pytest.raises(OSError):
        store.blobs.write_stream("state/ws-1/sv-9.tfstate", failing())  # type: ignore[attr-defined]
    assert store.blobs.get("state/ws-1/sv-9.tfstate") == b"old"
    assert list((Path(store.blobs.root) / "tmp").iterdir()) == []  # type: ignore[attr-defined]


def test_an_upload_url_never_replaces_an_object(store: Store) -> None:
    """The embedded server refuses any URL PUT to an existing object (409); S3 one signed `If-None-Match: *` (412)."""
    _needs_http(store)
    url = store.blobs.presign_put("plans/run-2/plan.bin", 60, exclusive=True)
    headers = {"If-None-Match": "*"}
    assert store.http.put(url, content=b"first", headers=headers).status_code == 200
    replay = store.http.put(url, content=b"second", headers=headers)
    assert replay.status_code == (409 if store.kind == "fs" else 412), replay.text
    assert store.blobs.get("plans/run-2/plan.bin") == b"first"
