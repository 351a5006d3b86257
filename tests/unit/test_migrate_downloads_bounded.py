"""`terrace migrate` reads what a source hands it within a bound: a file larger than the bound (declared or not,
compressed or not) is refused as it arrives, never held whole; an error body is read only in part."""

from __future__ import annotations

import gzip
import tracemalloc

import httpx
import pytest
from terrace.migrate.client import Api, ApiError

BOUND = 1024 * 1024


def _api(handler: httpx.MockTransport) -> Api:
    return Api("source", "https://x.example", "t", transport=handler)


def _chunks(total: int, size: int = 64 * 1024):  # type: ignore[no-untyped-def]
    sent = 0
    while sent < total:
        yield b"0" * size
        sent += size


def test_a_gzip_bomb_is_refused_at_the_bound_and_never_held_whole() -> None:
    bomb = gzip.compress(b"0" * (256 * 1024 * 1024))  # 256 MiB decoded, about 250 KB on the wire
    gzipped = {"Content-Encoding": "gzip"}  # the body streams as it would off a socket: one 250 KB chunk
    api = _api(httpx.MockTransport(lambda r: httpx.Response(200, content=iter([bomb]), headers=gzipped)))
    tracemalloc.start()
    try:
        with pytest.raises(ApiError) as refused:
            api.download("/api/v2/state-versions/sv-1/download", max_bytes=BOUND)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert refused.value.status == 413
    assert peak < 32 * 1024 * 1024  # the whole decoded body would be 256 MiB


def test_an_undeclared_stream_past_the_bound_is_refused_and_a_declared_size_before_any_read() -> None:
    streamed = _api(httpx.MockTransport(lambda r: httpx.Response(200, content=_chunks(4 * BOUND))))
    with pytest.raises(ApiError) as refused:
        streamed.download("/files/a", max_bytes=BOUND)
    assert refused.value.status == 413
    declared = _api(
        httpx.MockTransport(lambda r: httpx.Response(200, headers={"Content-Length": str(8 * BOUND)}, content=b"x"))
    )
    with pytest.raises(ApiError) as too_big:
        declared.download("/files/b", max_bytes=BOUND)
    assert too_big.value.status == 413


def test_a_file_within_the_bound_arrives_whole_and_an_error_keeps_its_status() -> None:
    body = b"terraform state" * 1000
    ok = _api(httpx.MockTransport(lambda r: httpx.Response(200, content=body)))
    assert ok.download("/files/c", max_bytes=BOUND) == body
    failing = _api(httpx.MockTransport(lambda r: httpx.Response(404, content=b"x" * (4 * BOUND))))
    with pytest.raises(ApiError) as missing:
        failing.download("/files/d", max_bytes=BOUND)
    assert missing.value.status == 404
