"""The outbound port reads a receiver's answer bounded (`adapters/httpx_outbound.py`): a notification URL, a run
task's URL or a forge's token endpoint a tenant named that answers with an endless body, or a compressed one that
inflates, costs the server at most `ANSWER_READ_MAX` bytes, and the delivery ends within its timeout."""

from __future__ import annotations

import gzip
import threading
import time
import tracemalloc
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from terrace.adapters.httpx_outbound import ANSWER_READ_MAX, HttpxOutbound
from terrace.adapters.outbound import BODY_KEPT
from terrace.domain.destinations import Allowance

BOMB = gzip.compress(b"\0" * (64 * 1024 * 1024))  # 64 MiB once inflated


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    sent: list[int] = []  # noqa: RUF012 - the bytes of each endless answer, for the test

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        if self.path == "/bomb":
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(BOMB)))
            self.end_headers()
            self.wfile.write(BOMB)
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        chunk, total = b"x" * 65536, 0
        try:
            while total < 128 * 1024 * 1024:  # 128 MiB, unless the reader lets go first
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                total += len(chunk)
        except OSError:
            pass
        finally:
            _Handler.sent.append(total)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def receiver() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_an_endless_answer_is_read_only_up_to_its_bound(receiver: str) -> None:
    outbound = HttpxOutbound(Allowance.parse(["127.0.0.0/8"]))
    started = time.monotonic()
    answer = outbound.post(f"{receiver}/endless", b"{}", {"Content-Type": "application/json"}, 10.0)
    assert answer.status == 200 and answer.body == "x" * BODY_KEPT
    assert time.monotonic() - started < 10
    deadline = time.monotonic() + 10
    while not _Handler.sent and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _Handler.sent and _Handler.sent[0] < 64 * 1024 * 1024  # the reader let go long before the end


def test_a_compressed_answer_is_not_inflated(receiver: str) -> None:
    outbound = HttpxOutbound(Allowance.parse(["127.0.0.0/8"]))
    tracemalloc.start()
    try:
        answer = outbound.post(f"{receiver}/bomb", b"{}", {}, 10.0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert answer.status == 200 and len(answer.body) <= BODY_KEPT
    assert peak < 8 * 1024 * 1024 and ANSWER_READ_MAX < len(BOMB)
