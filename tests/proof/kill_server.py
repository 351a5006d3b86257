"""The embedded server in a child process the proof kills with SIGKILL, and the process facts it checks.

`ProofServer` runs the stack `terrace serve --data DIR` runs (`LocalStack` on a data directory, `cli._run`), in a
child Python started from this file, so a test can give it short job timings (`terrace serve` reads none from its
environment). The port stays the same across restarts, so URLs handed out before a kill still name the server.

With `backend="moto"` the same stack runs the AWS adapters (`bootstrap.build_aws`) against a moto server that is
a process of its own (`MotoProcess`), so the data outlives the Terrace process the test kills: the table, buckets,
queues and key are created once (their names kept in DATA/resources.json) and found again at each restart.

Run as a program: `python kill_server.py DATA PORT ORGANIZATION SETTINGS_JSON [MOTO_ENDPOINT]`, or
`python kill_server.py moto PORT` for the moto server (with the presigned-URL check of `terrace dev --moto`).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import terrace

LAYERS = str(Path(terrace.__file__).resolve().parents[1])  # the child runs this checkout's code

START_TIMEOUT_S = 90  # a loaded 2-core machine starts slowly
STOP_TIMEOUT_S = 30
JSONAPI = "application/vnd.api+json"

# short job timings, as the e2e run stack's (tests/e2e/conftest.py RUN_SETTINGS): a dead runner is noticed by the
# reaper 4 s after its last heartbeat
KILL_SETTINGS: dict[str, Any] = {
    "job_heartbeat_s": 1,
    "job_heartbeat_timeout_s": 4,
    "job_retry_base_s": 1,
    "force_cancel_cooloff_s": 1,
    "max_runners": 2,
    "outbound_allow": ["127.0.0.0/8"],
    "notification_retry_base_s": 1,
}


def sized(quick: int, full: int) -> int:
    """`sized` of this folder's conftest (loaded by path: `import conftest` is ambiguous across test folders)."""
    module = sys.modules.get("proof_conftest")
    if module is None:
        spec = importlib.util.spec_from_file_location("proof_conftest", Path(__file__).with_name("conftest.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules["proof_conftest"] = module
    return int(module.sized(quick, full))


def wait_for(probe: Callable[[], Any], timeout: float, what: str, interval: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = probe()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class Info:
    url: str
    hostname: str
    token: str
    organization: str
    ca_bundle: str
    cli_config: str


@contextlib.contextmanager
def serving(settings: dict[str, Any] | None = None, backend: str = "embedded") -> Iterator[ProofServer]:
    """A ProofServer in a fresh folder (passable by job uids), killed and removed at the end."""
    from job_uids import traversable

    root = traversable(Path(tempfile.mkdtemp(prefix="terrace-proof-kill-")))
    server = ProofServer(root, settings, backend=backend)
    try:
        yield server
    finally:
        server.close()
        shutil.rmtree(root, ignore_errors=True)


class MotoProcess:
    """moto's server in a child process (killed only by `close`)."""

    def __init__(self, log: Path) -> None:
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        with log.open("ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, __file__, "moto", str(self.port)],
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONPATH": LAYERS},
            )

        def up() -> bool:
            assert self.process.poll() is None, log.read_text(errors="replace")[-3000:]
            try:
                return httpx.get(self.endpoint + "/moto-api/", timeout=2).status_code < 500
            except httpx.TransportError:
                return False

        wait_for(up, START_TIMEOUT_S, "moto to start")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


class ProofServer:
    def __init__(
        self, root: Path, settings: dict[str, Any] | None = None, organization: str = "proof", backend: str = "embedded"
    ) -> None:
        self.root, self.data = root, root / "data"
        self.data.mkdir(parents=True, exist_ok=True)
        self.backend = backend
        self.moto = MotoProcess(root / "moto.log") if backend == "moto" else None
        self.port = free_port()
        self.organization = organization
        self.settings = {**KILL_SETTINGS, **(settings or {})}
        self.process: subprocess.Popen[bytes] | None = None
        self.log = root / "server.log"
        self.starts = 0
        self.kills = 0

    def start(self, env: dict[str, str] | None = None) -> Info:
        """Start the server (`env`: added to this start's environment only, e.g. a fault hook's)."""
        (self.data / "dev.json").unlink(missing_ok=True)
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    __file__,
                    str(self.data),
                    str(self.port),
                    self.organization,
                    json.dumps(self.settings),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": LAYERS, **(env or {})},
            )
        process = self.process

        def described() -> dict[str, Any] | None:
            assert process.poll() is None, f"the server exited ({process.returncode}):\n{self.output()[-4000:]}"
            try:
                info = json.loads((self.data / "dev.json").read_text())
            except (OSError, ValueError):
                return None
            return info if info.get("pid") == process.pid else None

        info = wait_for(described, START_TIMEOUT_S, "the server to start")
        self.starts += 1
        return Info(**{k: info[k] for k in ("url", "hostname", "token", "organization", "ca_bundle", "cli_config")})

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def kill(self) -> None:
        """SIGKILL: no handler runs, nothing is flushed or handed back."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(STOP_TIMEOUT_S)
        self.process = None
        self.kills += 1

    def died(self, timeout: float) -> int:
        """Wait for the server to end on its own (a fault hook killed it); its exit code."""
        assert self.process is not None
        code = self.process.wait(timeout)
        self.process = None
        self.kills += 1
        return code

    def stop(self) -> int:
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(STOP_TIMEOUT_S)
        self.process = None
        return code

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.process = None
        if self.moto is not None:
            self.moto.close()

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def runner_pids(self) -> list[int]:
        """The server's runner processes (`python -m terrace.runner`), alive."""
        if self.process is None:
            return []
        return [pid for pid, cmd in descendants(self.pid).items() if "terrace.runner" in cmd]


def _parents() -> dict[int, int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] not in ("Z", "X"):
            parents[int(entry)] = int(fields[1])
    return parents


def command_line(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return cmdline.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def descendants(root: int) -> dict[int, str]:
    """Live processes below `root`: pid -> command line."""
    parents = _parents()
    found: dict[int, str] = {}
    frontier = {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier and pid not in found}
        found.update((pid, command_line(pid)) for pid in frontier)
    return found


def processes_mentioning(text: str) -> dict[int, str]:
    """Every live process whose command line or environment holds `text` (a job's marker, a data dir)."""
    found = {}
    needle = text.encode()
    for pid in _parents():
        if pid == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as environ:
                env = environ.read()
        except OSError:
            env = b""
        cmd = command_line(pid)
        if text in cmd or needle in env:
            found[pid] = cmd
    return found


class Client:
    """An httpx client of the server (its CA, the admin token), honouring 429 as go-tfe does."""

    def __init__(self, info: Info, timeout: float = 30) -> None:
        self.info = info
        self.http = httpx.Client(
            base_url=info.url,
            verify=ssl.create_default_context(cafile=info.ca_bundle),
            timeout=timeout,
            headers={"Authorization": f"Bearer {info.token}", "Accept": JSONAPI},
        )
        # signed blob URLs (uploads, downloads) carry no token
        self.blobs = httpx.Client(verify=ssl.create_default_context(cafile=info.ca_bundle), timeout=timeout)

    def request(self, method: str, path: str, body: Any = None, expect: int | None = 200, **kw: Any) -> httpx.Response:
        if body is not None:
            kw = {**kw, "json": body, "headers": {"Content-Type": JSONAPI, **kw.get("headers", {})}}
        for _ in range(50):
            response = self.http.request(method, path, **kw)
            if response.status_code != 429:
                break
            time.sleep(float(response.headers.get("X-RateLimit-Reset") or 0.1))
        if expect is not None:
            assert response.status_code == expect, f"{method} {path}: {response.status_code} {response.text}"
        return response

    def close(self) -> None:
        self.http.close()
        self.blobs.close()


def _moto(port: int) -> None:
    from terrace.local.presigned_check import moto_server

    server = moto_server("127.0.0.1", port)
    server.start()
    signal.sigwait({signal.SIGTERM, signal.SIGINT})
    server.stop()


def _on_moto(data: Path, endpoint: str, **kwargs: Any) -> Any:
    """LocalStack on an external moto: the resources are created once, then found again after a kill."""
    from terrace.local.stack import LocalStack
    from terrace.wiring.local_resources import LocalResources, create_resources

    class OnMoto(LocalStack):
        def _build_moto(self, public_url: str) -> Any:
            import secrets as random_secrets

            from terrace.bootstrap import build_aws
            from terrace.config import Settings
            from terrace.local.stack import LOCAL_REGION

            saved = data / "resources.json"
            if saved.exists():
                self.resources = LocalResources(**json.loads(saved.read_text()))
            else:
                self.resources = create_resources(endpoint, "proof")
                saved.write_text(json.dumps(self.resources.__dict__))
            secret_file = data / "url-signing.secret"
            if not secret_file.exists():
                secret_file.write_text(random_secrets.token_urlsafe(32))
            settings = Settings(
                **self.resources.settings_fields(),
                public_url=public_url,
                region=LOCAL_REGION,
                aws_endpoint_url=endpoint,
                url_signing_secret=secret_file.read_text(),
                **self._overrides(),
            )
            return build_aws(settings)

    return OnMoto(data_dir=None, **kwargs)


def main(argv: list[str]) -> None:
    from terrace.cli import _run
    from terrace.local.stack import LocalStack

    if argv[0] == "moto":
        _moto(int(argv[1]))
        return
    data, port, organization, settings = Path(argv[0]), int(argv[1]), argv[2], json.loads(argv[3])
    common = {"port": port, "organization": organization, "access_log": False, "state_dir": data, "host": "127.0.0.1"}
    if len(argv) > 4:
        stack = _on_moto(data, argv[4], **common)
    else:
        from kill_commit import wrap_ports_from_env  # the outbox proof's kill between a commit and its publish

        stack = LocalStack(data_dir=data, wrap_ports=wrap_ports_from_env(), **common)
    stack.settings_overrides.update(
        {key: tuple(value) if isinstance(value, list) else value for key, value in settings.items()}
    )
    _run(stack)


if __name__ == "__main__":
    main(sys.argv[1:])
