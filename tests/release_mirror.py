"""A local HTTPS release mirror in the vendors' layout (`runner/tool_fetch.py`), serving release zips made from
binaries on this host, with `SHA256SUMS` signed by a key made for the test (the key the runners are told to trust).
It counts what it served, per path, so a test can tell one fetch from two."""

from __future__ import annotations

import hashlib
import http.server
import ssl
import threading
import warnings
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import pysequoia
from terrace.local import tls


def _generate(name: str) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return pysequoia.Cert.generate(f"{name} <releases@example.com>")


class ReleaseMirror:
    def __init__(self, root: Path, tls_files: tls.TlsFiles) -> None:
        self.root, self.tls_files = root, tls_files
        self.key = _generate("Test Releases")
        self.stranger = _generate("Someone Else")  # signs what a test wants refused
        self.public_key = root / "trusted.asc"
        root.mkdir(parents=True, exist_ok=True)
        self.public_key.write_text(str(self.key))
        self.served: Counter[str] = Counter()
        self._server: http.server.ThreadingHTTPServer | None = None

    def base(self, tool: str) -> str:
        assert self._server is not None, "start the mirror first"
        return f"https://localhost:{self._server.server_address[1]}/{tool}"

    def add(
        self,
        tool: str,
        version: str,
        binary: Path | bytes,
        *,
        tamper: bool = False,
        stranger: bool = False,
        suffix: str = "",
    ) -> None:
        """Publish `binary` as `tool` `version` (linux_amd64); `tamper`: the zip is not the one the sums list;
        `stranger`: the sums are signed by a key nobody trusts; `suffix`: the signature file's (by default the
        vendor's: `.72D7468F.sig` for terraform, `.gpgsig` for OpenTofu)."""
        name = "terraform" if tool == "terraform" else "tofu"
        folder = self.root / tool / ("terraform/" + version if tool == "terraform" else f"v{version}")
        folder.mkdir(parents=True, exist_ok=True)
        archive = folder / f"{name}_{version}_linux_amd64.zip"
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as zipped:
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o755 << 16
            if isinstance(binary, bytes):
                zipped.writestr(info, binary)
            else:
                zipped.write(binary, name)
        digest = hashlib.sha256(archive.read_bytes()).hexdigest()
        sums = f"{digest}  {archive.name}\n".encode()
        (folder / f"{name}_{version}_SHA256SUMS").write_bytes(sums)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            signer = (self.stranger if stranger else self.key).secrets.signer()
            signature = pysequoia.sign(signer, sums, mode=pysequoia.SignatureMode.DETACHED, armor=False)
        suffix = suffix or (".72D7468F.sig" if tool == "terraform" else ".gpgsig")
        (folder / f"{name}_{version}_SHA256SUMS{suffix}").write_bytes(signature)
        if tamper:
            with archive.open("ab") as out:
                out.write(b"\0")  # still a zip; no longer the archive the sums list

    def start(self) -> ReleaseMirror:
        mirror = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, directory=str(mirror.root), **kwargs)

            def do_GET(self) -> None:
                mirror.served[self.path] += 1
                super().do_GET()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.tls_files.cert_chain, self.tls_files.key)
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        threading.Thread(target=self._server.serve_forever, name="release-mirror", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def archive_fetches(self, tool: str, version: str) -> int:
        return sum(n for path, n in self.served.items() if path.endswith(".zip") and f"_{version}_" in path)
