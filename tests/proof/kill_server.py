"""The embedded server in a child process the proof kills with SIGKILL, and the helpers its tests share.

`ProofServer` runs the stack `terrace serve --data DIR` runs (`LocalStack` on a data directory, `cli._run`), in a
child Python (`kill_server_program.py`), so a test can give it short job timings (`terrace serve` reads none from its
environment). The port stays the same across restarts, so URLs handed out before a kill still name the server.

With `backend="moto"` the same stack runs the AWS adapters (`bootstrap.build_aws`) against a moto server that is
a process of its own (`MotoProcess`), so the data outlives the Terrace process the test kills: the table, buckets,
queues and key are created once (their names kept in DATA/resources.json) and found again at each restart.

The client (`Client`, `Info`: `kill_api_client.py`) and the process facts (`descendants`, `processes_mentioning`:
`process_tree.py`) live in modules of their own and are importable from here too.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import terrace
from kill_api_client import Client as Client
from kill_api_client import Info
from process_tree import descendants
from process_tree import processes_mentioning as processes_mentioning

LAYERS = str(Path(terrace.__file__).resolve().parents[1])  # the child runs this checkout's code
PROGRAM = str(Path(__file__).with_name("kill_server_program.py"))  # what the child runs

START_TIMEOUT_S = 90  # a loaded 2-core machine starts slowly
STOP_TIMEOUT_S = 30

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
                [sys.executable, PROGRAM, "moto", str(self.port)],
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
                    PROGRAM,
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
