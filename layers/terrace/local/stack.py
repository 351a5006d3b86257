"""The local stack behind `make dev`: moto server + seeded resources + the API over HTTPS, in one process.

    stack = LocalStack(port=8443)
    info = stack.start()          # fresh moto, fresh data, writes <state_dir>/dev.json
    ...
    stack.stop()

Everything runs on daemon threads, so tests start the same stack in-process. Later pieces (runner
processes, reaper and scaler timers) plug in through `background_tasks`: callables taking the stack,
started on daemon threads once the API answers; they should return when `stack.stopping` is set.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from terrace.config import Settings
from terrace.local import tls
from terrace.local import workers as local_workers
from terrace.local.resources import LOCAL_REGION, LocalResources, create_resources
from terrace.local.seed import Seeded, seed_admin
from terrace.local.terraform_config import write_cli_config

DEFAULT_PORT = 8443
DEFAULT_ORGANIZATION = "acme"
DEV_FILE = "dev.json"
DUMMY_AWS_ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": LOCAL_REGION}

BackgroundTask = Callable[["LocalStack"], None]


@dataclass(frozen=True)
class DevInfo:
    """What a client needs to use the stack; written to dev.json."""

    url: str
    hostname: str
    token: str
    organization: str
    ca_bundle: str
    cli_config: str

    def as_dict(self) -> dict[str, str]:
        return dict(self.__dict__)


class LocalStack:
    def __init__(
        self,
        *,
        port: int = DEFAULT_PORT,
        organization: str = DEFAULT_ORGANIZATION,
        state_dir: Path | str = ".terrace",
        prefix: str = "terrace",
        access_log: bool = False,
        workers: bool = True,
    ) -> None:
        self.port = port
        self.organization = organization
        self.state_dir = Path(state_dir).resolve()
        self.prefix = prefix
        self.access_log = access_log
        self.background_tasks: list[BackgroundTask] = list(local_workers.ALL) if workers else []
        self.settings_overrides: dict[str, Any] = {}  # e.g. shorter job timings in tests
        self.container: Any = None
        self.launchers: list[Any] = []  # runner launchers to stop with the stack
        self.stopping = threading.Event()
        self.settings: Settings | None = None
        self.resources: LocalResources | None = None
        self.info: DevInfo | None = None
        self.seeded: Seeded | None = None
        self._moto: Any = None
        self._server: Any = None
        self._threads: list[threading.Thread] = []

    # lifecycle ---------------------------------------------------------------------------
    def start(self) -> DevInfo:
        """Start moto, seed it, serve the API; write dev.json. Fails early (and cleans up) on a busy port."""
        for key, value in DUMMY_AWS_ENV.items():
            os.environ.setdefault(key, value)  # boto3 needs some credentials; moto accepts any
        self.stopping.clear()
        listener = _listen(self.port)  # first: a busy port fails before anything else starts
        try:
            self.info = self._start(listener)
        except BaseException:
            listener.close()
            self.stop()
            raise
        self.dev_file.write_text(json.dumps({**self.info.as_dict(), "env": self.env()}, indent=2) + "\n")
        self.dev_file.chmod(0o600)
        # Job uids may pass through to the provider mirror only: not list the folder, nor read the admin
        # token (dev.json, terraform.rc) or the CA key (tls/).
        self.state_dir.chmod(0o711)
        (self.state_dir / "tls").chmod(0o700)
        for task in self.background_tasks:
            self._spawn(task)
        return self.info

    def _start(self, listener: socket.socket) -> DevInfo:
        from moto.server import ThreadedMotoServer

        from terrace.bootstrap import build_aws

        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's per-request lines drown the API's
        self._moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self._moto.start()
        host, moto_port = self._moto.get_host_and_port()
        endpoint = f"http://{host}:{moto_port}"
        self.resources = create_resources(endpoint, self.prefix)

        hostname = f"localhost:{listener.getsockname()[1]}"
        self.settings = Settings(
            **self.resources.settings_fields(),
            public_url=f"https://{hostname}",
            region=LOCAL_REGION,
            aws_endpoint_url=endpoint,
            url_signing_secret=os.environ.get("TERRACE_URL_SIGNING_SECRET") or secrets.token_urlsafe(32),
            **self.settings_overrides,
        )
        container = self.container = build_aws(self.settings)
        self.seeded = seed_admin(container, self.organization)
        files = tls.write_certificates(self.state_dir / "tls")
        cli_config = write_cli_config(self.state_dir, hostname, self.seeded.token)
        self._serve(container, listener, files)
        return DevInfo(
            url=f"https://{hostname}",
            hostname=hostname,
            token=self.seeded.token,
            organization=self.organization,
            ca_bundle=str(files.ca_bundle),
            cli_config=str(cli_config),
        )

    def stop(self) -> None:
        """Workers first (a scaler tick cannot start runners after they were stopped), then runner processes,
        the API, moto. Each waits for the one before: nothing polls a stopped server or a deleted queue."""
        self.stopping.set()
        workers = [thread for thread in self._threads if thread.name != "terrace-api"]
        for thread in workers:
            thread.join(timeout=60)
        for launcher in self.launchers:
            launcher.stop_all()
        self.launchers.clear()
        if self._server is not None:
            self._server.should_exit = True
        for thread in self._threads:
            thread.join(timeout=60)
        self._threads.clear()
        self._server = None
        if self._moto is not None:
            self._moto.stop()
            self._moto = None

    def __enter__(self) -> DevInfo:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # facts -------------------------------------------------------------------------------
    @property
    def dev_file(self) -> Path:
        return self.state_dir / DEV_FILE

    def env(self) -> dict[str, str]:
        """TERRACE_* variables under which Settings.from_env() sees this stack (for child processes)."""
        if self.settings is None or self.resources is None:
            raise RuntimeError("the stack is not started")
        s = self.settings
        return {
            **self.resources.env(),
            "TERRACE_PUBLIC_URL": s.public_url,
            "TERRACE_AWS_ENDPOINT_URL": s.aws_endpoint_url or "",
            "TERRACE_URL_SIGNING_SECRET": s.url_signing_secret,
            "AWS_REGION": s.region,
            **{k: os.environ.get(k, v) for k, v in DUMMY_AWS_ENV.items()},
        }

    # internals ---------------------------------------------------------------------------
    def _serve(self, container: Any, listener: socket.socket, files: tls.TlsFiles) -> None:
        import uvicorn

        from terrace.web.app import create_app

        config = uvicorn.Config(
            create_app(container),
            ssl_certfile=str(files.cert_chain),
            ssl_keyfile=str(files.key),
            log_level="info" if self.access_log else "warning",
            access_log=self.access_log,
            lifespan="off",
        )
        self._server = uvicorn.Server(config)
        thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [listener]}, name="terrace-api", daemon=True
        )
        thread.start()
        self._threads.append(thread)
        deadline = time.monotonic() + 60  # generous: a loaded machine starts slowly
        while not self._server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the API server did not start; see the log above")
            time.sleep(0.01)

    def _spawn(self, task: BackgroundTask) -> None:
        name = getattr(task, "__name__", "background-task")
        thread = threading.Thread(target=task, args=(self,), name=f"terrace-{name}", daemon=True)
        thread.start()
        self._threads.append(thread)


def _listen(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as exc:
        sock.close()
        raise RuntimeError(f"port {port} is busy; set TERRACE_PORT or pass --port") from exc
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def read_dev_env(state_dir: Path | str = ".terrace") -> dict[str, str]:
    """TERRACE_* variables of the running dev stack (from its dev.json), or {} when there is none."""
    path = Path(state_dir) / DEV_FILE
    if not path.exists():
        return {}
    env = json.loads(path.read_text()).get("env")
    return dict(env) if isinstance(env, dict) else {}
