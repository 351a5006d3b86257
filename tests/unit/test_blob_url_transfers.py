"""Blob URLs of the embedded server (`web/blob_urls.py`) moving bodies larger than one write batch: over the real
HTTPS server (`terrace serve`'s uvicorn on uvloop and httptools) a streamed upload of several batches is hashed,
written and read back whole, ranges and HEAD answer from the file, and bad ranges are refused; at the ASGI level a
body that passes the URL's size limit several batches in (while a batch is being written) is refused with nothing
left behind."""

from __future__ import annotations

import asyncio
import hashlib
import os
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from terrace.adapters.fs_blobs import FsBlobs
from terrace.bootstrap import build_embedded
from terrace.config import Settings
from terrace.local.stack import LocalStack
from terrace.web.app import create_app
from terrace.web.blob_urls import WRITE_BATCH

MiB = 1024 * 1024


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalStack, httpx.Client]]:
    data = tmp_path_factory.mktemp("blob-urls") / "data"
    stack = LocalStack(port=0, state_dir=data, data_dir=data, workers=False)
    info = stack.start()
    try:
        with httpx.Client(verify=ssl.create_default_context(cafile=info.ca_bundle), timeout=120) as client:
            yield stack, client
    finally:
        stack.stop()


def _pieces(body: bytes, size: int) -> Iterator[bytes]:  # no Content-Length: the body is chunked on the wire
    for start in range(0, len(body), size):
        yield body[start : start + size]


def test_a_body_of_several_batches_streams_up_and_back_over_https(served: tuple[LocalStack, httpx.Client]) -> None:
    stack, client = served
    blobs: FsBlobs = stack.container.blobs
    body = os.urandom(5 * WRITE_BATCH + 12345)
    key = "state/ws-big/sv-1.tfstate"
    put = client.put(blobs.signer.sign("PUT", key, 60, len(body)), content=_pieces(body, 100_000))
    assert put.status_code == 200, put.text
    assert put.headers["etag"] == f'"{hashlib.md5(body).hexdigest()}"'
    assert blobs.path_of(key).read_bytes() == body
    assert list((blobs.root / "tmp").iterdir()) == []

    url = blobs.presign_get(key, 60)
    got = client.get(url)
    assert got.status_code == 200 and got.content == body
    assert got.headers["content-length"] == str(len(body))
    with client.stream("GET", url) as streamed:  # what the runner and terraform do with a large state
        assert hashlib.md5(b"".join(streamed.iter_bytes())).hexdigest() == hashlib.md5(body).hexdigest()
    head = client.head(url)
    assert head.status_code == 200 and head.headers["content-length"] == str(len(body)) and head.content == b""

    ranged = client.get(url, headers={"Range": f"bytes={WRITE_BATCH - 10}-{WRITE_BATCH + 9}"})
    assert ranged.status_code == 206 and ranged.content == body[WRITE_BATCH - 10 : WRITE_BATCH + 10]
    assert ranged.headers["content-range"] == f"bytes {WRITE_BATCH - 10}-{WRITE_BATCH + 9}/{len(body)}"
    beyond = client.get(url, headers={"Range": f"bytes={len(body) + 1}-"})
    assert beyond.status_code == 416 and beyond.headers["content-range"] == f"bytes */{len(body)}"
    assert client.get(url, headers={"Range": "bytes=oops"}).status_code == 400


def test_the_url_checks_hold_on_the_https_server(served: tuple[LocalStack, httpx.Client]) -> None:
    stack, client = served
    blobs: FsBlobs = stack.container.blobs
    key = "state/ws-checks/sv-1.tfstate"
    blobs.put(key, b"kept")
    small_put = blobs.signer.sign("PUT", key, 60, 1024)
    assert client.put(small_put, content=b"x" * 1025).status_code == 413  # declared past the limit
    assert client.put(blobs.presign_get(key, 60), content=b"evil").status_code == 403  # a GET URL does not write
    assert client.get(small_put).status_code == 403  # a PUT URL does not read
    expired = client.get(blobs.presign_get(key, -1))
    assert expired.status_code == 403 and "expired" in expired.json()["errors"][0]["detail"]
    assert client.get(blobs.presign_get(key, 60)).content == b"kept"


def _asgi_put(app: Any, url: str, chunks: list[bytes]) -> tuple[int, bytes]:
    """One PUT through the app's ASGI interface, its body in `chunks` messages (as a socket delivers it)."""
    path, _, query = url.partition("://")[2].partition("/")[2].partition("?")
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": "1.1",
        "method": "PUT",
        "scheme": "https",
        "path": "/" + path,
        "raw_path": ("/" + path).encode(),
        "query_string": query.encode(),
        "root_path": "",
        "headers": [(b"host", b"testserver"), (b"transfer-encoding", b"chunked")],
        "client": ("127.0.0.1", 1),
        "server": ("testserver", 443),
    }
    messages = [{"type": "http.request", "body": chunk, "more_body": True} for chunk in chunks]
    messages.append({"type": "http.request", "body": b"", "more_body": False})
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        await asyncio.sleep(0)
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    return status, b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


def test_a_body_past_the_limit_several_batches_in_is_refused_and_leaves_nothing(tmp_path: Path) -> None:
    settings = Settings(
        table_name="embedded",
        blob_bucket="embedded",
        data_dir=str(tmp_path / "data"),
        public_url="https://testserver",
        url_signing_secret="transfer-secret",
    )
    container = build_embedded(settings)
    try:
        blobs: FsBlobs = container.blobs
        app = create_app(container)
        key = "config/ws-1/cv-1.tar.gz"
        limit = 2 * WRITE_BATCH + WRITE_BATCH // 2
        url = blobs.signer.sign("PUT", key, 60, limit)
        chunks = [b"z" * 65536] * (5 * WRITE_BATCH // 65536)
        status, body = _asgi_put(app, url, chunks)
        assert status == 413 and b"larger than" in body
        assert blobs.head(key) is None  # (an upload URL never replaces an object: nothing may be there before)
        assert list((blobs.root / "tmp").iterdir()) == []

        status, _ = _asgi_put(app, url, [b"z" * 65536] * (limit // 65536))  # at the limit: written
        assert status == 200 and blobs.get(key) == b"z" * (limit // 65536 * 65536)
    finally:
        container.close()
