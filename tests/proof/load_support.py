"""What the load and soak scenarios share: a server in a process of its own (`terrace serve` on SQLite and files, or
`terrace dev --moto` on the AWS adapters), loopback only, stopped by its context; API tokens for the clients; the
same-run baseline of direct SQLite and file writes; latency figures.

The server runs apart from the clients so their work does not share its interpreter, and so the soak can sample
its process (resident memory, open files, threads) and read its log.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import terrace
from job_uids import traversable

REPO = str(Path(__file__).resolve().parents[2])
if REPO not in sys.path:  # bench/ is a top-level package of the repository, not of the installed project
    sys.path.insert(0, REPO)

from bench import ratelimit  # noqa: E402
from bench.common import percentile  # noqa: E402


def _proof_conftest() -> Any:
    """This folder's conftest, by path (`import conftest` is ambiguous across test folders)."""
    spec = importlib.util.spec_from_file_location("proof_conftest", Path(__file__).with_name("conftest.py"))
    assert spec is not None and spec.loader is not None
    module = sys.modules.get("proof_conftest") or importlib.util.module_from_spec(spec)
    if "proof_conftest" not in sys.modules:
        sys.modules["proof_conftest"] = module
        spec.loader.exec_module(module)
    return module


FULL: bool = _proof_conftest().FULL
sized = _proof_conftest().sized

JSONAPI = "application/vnd.api+json"
LAYERS = str(Path(terrace.__file__).resolve().parents[1])  # the server runs this checkout's code
START_TIMEOUT_S = 120
STOP_TIMEOUT_S = 30
CLI = "from terrace.cli import main; main()"


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    backend: str
    root: Path  # everything the server keeps (data, TLS, dev.json)
    data_dir: Path | None  # the SQLite file and blobs (embedded only)
    log_path: Path
    url: str
    token: str
    organization: str
    ca_bundle: str
    hostname: str
    cli_config: str

    def client(self, token: str | None = None, **kwargs: Any) -> httpx.Client:
        """A JSON:API client that honours 429 (`bench/ratelimit.py`)."""
        return ratelimit.client(
            base_url=self.url,
            verify=self.ca_bundle,
            timeout=kwargs.pop("timeout", 120),
            headers={"Authorization": f"Bearer {token or self.token}", "Accept": JSONAPI},
            **kwargs,
        )

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")


def _command(backend: str, root: Path, organization: str) -> list[str]:
    if backend == "embedded":
        return [sys.executable, "-c", CLI, "serve", "--data", str(root / "data"), "--port", "0", "--organization",
                organization]  # fmt: skip
    return [sys.executable, "-c", CLI, "dev", "--moto", "--port", "0", "--organization", organization]


@contextlib.contextmanager
def served(
    backend: str = "embedded", *, organization: str = "proof", env: dict[str, str] | None = None
) -> Iterator[Server]:
    """A fresh server on a free loopback port until the context ends (SIGTERM, then SIGKILL after 30 s)."""
    # not under pytest's base folder: job uids must pass through it to the runners' work folders
    root = traversable(Path(tempfile.mkdtemp(prefix=f"terrace-proof-{backend}-")))
    log_path = root / "server.log"
    dev_file = root / "data" / "dev.json" if backend == "embedded" else root / ".terrace" / "dev.json"
    with log_path.open("wb") as log:
        process = subprocess.Popen(  # noqa: S603 - our own CLI
            _command(backend, root, organization),
            cwd=root,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={
                **os.environ,
                "PYTHONPATH": os.pathsep.join([LAYERS, os.environ.get("PYTHONPATH", "")]),
                **(env or {}),
            },
            start_new_session=True,
        )
    try:
        info = _wait_started(process, dev_file, log_path)
        yield Server(
            process=process,
            backend=backend,
            root=root,
            data_dir=root / "data" if backend == "embedded" else None,
            log_path=log_path,
            url=info["url"],
            token=info["token"],
            organization=info["organization"],
            ca_bundle=info["ca_bundle"],
            hostname=info["hostname"],
            cli_config=info["cli_config"],
        )
    finally:
        _stop(process)
        subprocess.run(["rm", "-rf", str(root)], check=False)  # noqa: S603,S607 - job uids' files included


def _wait_started(process: subprocess.Popen[bytes], dev_file: Path, log_path: Path) -> dict[str, Any]:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}:\n{log_path.read_text()[-3000:]}")
        with contextlib.suppress(OSError, ValueError):
            info: dict[str, Any] = json.loads(dev_file.read_text())
            if info.get("pid") == process.pid:
                with httpx.Client(verify=info["ca_bundle"], timeout=10) as http:
                    if http.get(f"{info['url']}/api/v2/ping").status_code == 204:
                        return info
        time.sleep(0.2)
    raise RuntimeError(f"the server did not start in {START_TIMEOUT_S} s:\n{log_path.read_text()[-3000:]}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # its runner children too (a session of its own)
        process.wait(10)


def new_tokens(server: Server, count: int) -> list[str]:
    """`count` fresh user tokens of the admin (TFC limits each token on its own: 30 requests per second)."""
    with server.client() as http:
        user_id = http.get("/api/v2/account/details").raise_for_status().json()["data"]["id"]
        tokens = []
        for n in range(count):
            body = {"data": {"type": "authentication-tokens", "attributes": {"description": f"proof client {n}"}}}
            created = http.post(
                f"/api/v2/users/{user_id}/authentication-tokens", json=body, headers={"Content-Type": JSONAPI}
            )
            tokens.append(created.raise_for_status().json()["data"]["attributes"]["token"])
    return tokens


def create_workspace(http: httpx.Client, organization: str, name: str, **attributes: Any) -> str:
    body = {"data": {"type": "workspaces", "attributes": {"name": name, "execution-mode": "local", **attributes}}}
    response = http.post(
        f"/api/v2/organizations/{organization}/workspaces", json=body, headers={"Content-Type": JSONAPI}
    )
    return str(response.raise_for_status().json()["data"]["id"])


# the baseline ---------------------------------------------------------------------------------------------
def direct_writes(payloads: list[tuple[str, int, bytes]]) -> list[float]:
    """The same payloads written straight to SQLite and files, one after the other, as durably as the embedded server
    writes them (WAL, synchronous=FULL; the blob in a temporary file, fsynced, renamed, its folder fsynced); the
    seconds each write took."""
    seconds = []
    with tempfile.TemporaryDirectory(prefix="terrace-proof-baseline-") as tmp:
        conn = sqlite3.connect(Path(tmp) / "baseline.sqlite", isolation_level=None)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("CREATE TABLE versions (ws TEXT, serial INTEGER, md5 TEXT, path TEXT, PRIMARY KEY (ws, serial))")
        blobs = Path(tmp) / "blobs"
        for ws, serial, raw in payloads:
            started = time.perf_counter()
            folder = blobs / ws
            folder.mkdir(parents=True, exist_ok=True)
            target = folder / f"{serial}.json"
            partial = folder / f".{serial}.partial"
            with partial.open("wb") as out:
                out.write(raw)
                out.flush()
                os.fsync(out.fileno())
            partial.rename(target)
            fd = os.open(folder, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            md5 = hashlib.md5(raw).hexdigest()  # noqa: S324 - the protocol's checksum
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO versions VALUES (?, ?, ?, ?)", (ws, serial, md5, str(target)))
            conn.execute("COMMIT")
            seconds.append(time.perf_counter() - started)
        conn.close()
    return seconds


def latency(values: list[float]) -> dict[str, float]:
    return {"p50_s": percentile(values, 50), "p99_s": percentile(values, 99), "count": float(len(values))}


def machine() -> dict[str, str]:
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if "model name" in line
        ),
        "unknown",
    )
    return {"nproc": str(os.cpu_count()), "cpu": model, "python": sys.version.split()[0]}


def report(name: str, figures: dict[str, Any]) -> None:
    """Print the figures (pytest -s shows them; make proof passes -s) and keep them under .build/proof/ as JSON."""
    out = Path(__file__).resolve().parents[2] / ".build" / "proof"
    out.mkdir(parents=True, exist_ok=True)
    stamped = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": machine(), **figures}
    (out / f"{name}.json").write_text(json.dumps(stamped, indent=2, default=str) + "\n")
    print(f"\n[proof figures] {name}: {json.dumps(stamped, default=str)}")
