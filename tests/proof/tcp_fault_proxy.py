"""A TCP proxy the test controls, between the runners and the API (TLS passes through it untouched).

While `faulty` is set, each new connection meets what the seeded rng draws: passed through, delayed before it is
forwarded, dropped at once (closed before a byte), or reset (RST) after a random number of bytes from the client
(mid-request: a log chunk, a plan upload). Threads, one pair per connection; `close()` stops everything.
"""

from __future__ import annotations

import random
import socket
import struct
import threading
import time
from collections import Counter


class FaultProxy:
    def __init__(self, rng: random.Random, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.rng, self.target = rng, (target_host, target_port)
        self.faulty = False
        self.drop_rate, self.reset_rate, self.delay_rate, self.max_delay_s = 0.15, 0.15, 0.2, 1.0
        self.seen: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._closed = threading.Event()
        threading.Thread(target=self._accept, name="proof-proxy", daemon=True).start()

    def close(self) -> None:
        self._closed.set()
        self._listener.close()
        with self._lock:
            for sock in list(self._sockets):
                _close(sock)

    def _draw(self) -> tuple[str, float, int]:
        with self._lock:
            roll, delay, after = (
                self.rng.random(),
                self.rng.uniform(0, self.max_delay_s),
                self.rng.randint(1, 64 * 1024),
            )
        if not self.faulty:
            return "pass", 0.0, 0
        for kind, rate in (("drop", self.drop_rate), ("reset", self.reset_rate), ("delay", self.delay_rate)):
            if roll < rate:
                return kind, delay, after
            roll -= rate
        return "pass", 0.0, 0

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        kind, delay, after = self._draw()
        with self._lock:
            self.seen[kind] += 1
            self._sockets.add(client)
        if kind == "drop":
            _reset(client)
            return
        if kind == "delay":
            time.sleep(delay)
        try:
            upstream = socket.create_connection(self.target, timeout=10)
        except OSError:
            _close(client)
            return
        upstream.settimeout(None)
        with self._lock:
            self._sockets.add(upstream)
        budget = after if kind == "reset" else None
        threading.Thread(target=self._pipe, args=(upstream, client, None), daemon=True).start()
        self._pipe(client, upstream, budget)

    def _pipe(self, source: socket.socket, sink: socket.socket, budget: int | None) -> None:
        """Copy source to sink; with a budget, reset both once that many bytes went through."""
        sent = 0
        try:
            while chunk := source.recv(16384):
                if budget is not None and sent + len(chunk) > budget:
                    sink.sendall(chunk[: budget - sent])
                    _reset(source)
                    _reset(sink)
                    return
                sink.sendall(chunk)
                sent += len(chunk)
        except OSError:
            pass
        _close(sink)
        _close(source)


def _reset(sock: socket.socket) -> None:
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close sends RST
    except OSError:
        pass
    _close(sock)


def _close(sock: socket.socket) -> None:
    try:
        sock.close()
    except OSError:
        pass
