"""The baselines and the out-of-process client of the embedded state round trip (`bench/state_roundtrip.py`).

- `RawHttpsServer`: the least an HTTPS file server can do in this runtime on this machine, with none of Terrace's
  layers: threads on blocking TLS sockets (OpenSSL reads and writes the socket itself; no event loop, no ASGI, no
  framework). PUT streams the body to a temporary file, MD5 as it passes, fsync, rename (what a blob upload must
  do); GET sends the file in 1 MiB reads. It serves the stack's own certificate, in the benchmark's process as
  the embedded server is.
- `CurlClient`: blob PUTs and GETs by curl in its own process, with TLS in C as terraform's Go client has it (no
  `Expect: 100-continue`, as Go sends none; the local CA alone, as Go reads its roots once per process).
- `HttpxClient`: the same through httpx in the benchmark's process (the benchmark's historical client: its TLS and
  HTTP run in Python under the same GIL as the server's).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import ssl
import tempfile
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import httpx

CHUNK = 1024 * 1024


class Client(Protocol):
    name: str

    def prepare(self, *bodies: bytes) -> None:
        """Ready the bodies the next PUTs send (outside the timing)."""
        ...

    def put(self, url: str, body: bytes) -> None: ...

    def get(self, url: str, headers: dict[str, str] | None = None) -> Callable[[], str]:
        """GET `url` following redirects; returns what computes the body's MD5 (after the timing)."""
        ...

    def close(self) -> None: ...


class HttpxClient:
    name = "httpx (in-process)"

    def __init__(self, ca_bundle: str) -> None:
        self._http = httpx.Client(timeout=300, verify=ssl.create_default_context(cafile=ca_bundle))

    def prepare(self, *bodies: bytes) -> None:
        pass

    def put(self, url: str, body: bytes) -> None:
        self._http.put(url, content=body).raise_for_status()

    def get(self, url: str, headers: dict[str, str] | None = None) -> Callable[[], str]:
        response = self._http.get(url, headers=headers, follow_redirects=True)
        response.raise_for_status()
        body = response.content
        return lambda: hashlib.md5(body).hexdigest()  # noqa: S324 - the protocol's checksum

    def close(self) -> None:
        self._http.close()


class CurlClient:
    name = "curl (own process)"

    def __init__(self, ca: str) -> None:
        self._ca = ca
        self._dir = Path(tempfile.mkdtemp(prefix="bench-curl-"))
        self._files: list[tuple[bytes, Path]] = []  # the bodies prepared (kept: their ids stay unique) and files

    @staticmethod
    def available() -> bool:
        return shutil.which("curl") is not None

    def _curl(self, *args: str) -> None:
        import subprocess

        base = ["curl", "-sS", "--fail", "--cacert", self._ca, "-H", "Expect:"]
        subprocess.run([*base, *args], check=True, stdout=subprocess.DEVNULL)

    def put(self, url: str, body: bytes) -> None:
        path = next((path for known, path in self._files if known is body), None)
        if path is None:
            raise RuntimeError("prepare(body) first: a client uploads from a file it already has")
        self._curl("-X", "PUT", "-T", str(path), "-o", os.devnull, url)

    def prepare(self, *bodies: bytes) -> None:
        """Write the files the next PUTs send (before the timing starts); forget older ones."""
        for _known, path in self._files:
            if not any(_known is body for body in bodies):
                path.unlink()
        kept = [(known, path) for known, path in self._files if any(known is body for body in bodies)]
        for body in bodies:
            if not any(known is body for known, _path in kept):
                path = self._dir / f"body-{uuid.uuid4().hex}"
                path.write_bytes(body)
                kept.append((body, path))
        self._files = kept

    def get(self, url: str, headers: dict[str, str] | None = None) -> Callable[[], str]:
        target = self._dir / f"download-{uuid.uuid4().hex}"
        extra = [arg for name, value in (headers or {}).items() for arg in ("-H", f"{name}: {value}")]
        self._curl("-L", *extra, "-o", str(target), url)

        def md5() -> str:
            digest = hashlib.md5()  # noqa: S324
            with target.open("rb") as source:
                while chunk := source.read(CHUNK):
                    digest.update(chunk)
            target.unlink()
            return digest.hexdigest()

        return md5

    def close(self) -> None:
        shutil.rmtree(self._dir, ignore_errors=True)


class RawHttpsServer:
    """`with RawHttpsServer(root, cert_chain, key) as url:` serves PUT/GET of `url/<name>` until the block ends."""

    def __init__(self, root: Path, cert_chain: Path, key: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self._tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._tls.load_cert_chain(cert_chain, key)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="bench-raw-https", daemon=True)

    def __enter__(self) -> str:
        self._thread.start()
        return f"https://localhost:{self._listener.getsockname()[1]}"

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._listener.close()
        self._thread.join(timeout=5)

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            with self._tls.wrap_socket(conn, server_side=True) as tls, tls.makefile("rb", buffering=CHUNK) as reader:
                while self._one_request(tls, reader):
                    pass
        except (OSError, ValueError):
            pass  # a client that went away

    def _one_request(self, tls: Any, reader: Any) -> bool:
        line = reader.readline()
        if not line:
            return False
        method, target, _version = line.decode("latin-1").split(" ", 2)
        headers: dict[str, str] = {}
        while (header := reader.readline()) not in (b"\r\n", b"\n", b""):
            name, _, value = header.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        path = self.root / target.split("?")[0].strip("/").replace("/", "_")
        if method == "PUT":
            if headers.get("expect", "").lower() == "100-continue":
                tls.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            digest = _receive_file(reader, int(headers["content-length"]), path)
            tls.sendall(f'HTTP/1.1 200 OK\r\nETag: "{digest}"\r\nContent-Length: 0\r\n\r\n'.encode())
        elif method == "GET" and path.is_file():
            tls.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {path.stat().st_size}\r\n\r\n".encode())
            with path.open("rb") as source:
                while chunk := source.read(CHUNK):
                    tls.sendall(chunk)
        else:
            tls.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
        return True


def _receive_file(reader: Any, length: int, path: Path) -> str:
    digest = hashlib.md5()  # noqa: S324
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".upload-")
    with os.fdopen(fd, "wb") as out:
        while length:
            chunk = reader.read(min(CHUNK, length))
            if not chunk:
                raise OSError("the client closed before the end of the body")
            length -= len(chunk)
            digest.update(chunk)
            out.write(chunk)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temp, path)
    return digest.hexdigest()
