"""An idle keep-alive connection outlives the clients' own idle timeout (Go's net/http: 90 s), so a client never
sends a request on a connection the server is closing. With uvicorn's 5 s default, 200 concurrent state clients
lost requests to "server disconnected without sending a response" (tests/proof/test_load_state.py)."""

from __future__ import annotations

import socket
import ssl
import time
from typing import Any
from urllib.parse import urlsplit

from terrace.local.api_server import KEEP_ALIVE_S

IDLE_S = 6  # past uvicorn's default keep-alive (5 s)


def _ping(conn: ssl.SSLSocket, host: str) -> bytes:
    conn.sendall(f"GET /api/v2/ping HTTP/1.1\r\nHost: {host}\r\nConnection: keep-alive\r\n\r\n".encode())
    return conn.recv(65536)


def test_an_idle_connection_is_still_open_after_the_old_keep_alive(stack: Any) -> None:
    assert KEEP_ALIVE_S > 90
    url = urlsplit(stack.url)
    context = ssl.create_default_context(cafile=stack.ca_bundle)
    with socket.create_connection((url.hostname, url.port), timeout=30) as raw:
        with context.wrap_socket(raw, server_hostname=url.hostname) as conn:
            assert _ping(conn, url.netloc).startswith(b"HTTP/1.1 204")
            time.sleep(IDLE_S)  # the client's think time: a lock poll, a plan between two calls
            assert _ping(conn, url.netloc).startswith(b"HTTP/1.1 204")  # b"" once the server closed it
