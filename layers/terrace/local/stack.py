"""The local stack: the API over HTTPS with its runners, reaper and events worker, in one process.

    stack = LocalStack(port=8443, data_dir=".terrace/data")   # embedded: SQLite + files, data kept
    stack = LocalStack(port=8443)                              # moto: a fresh AWS twin, data lost at stop
    info = stack.start()          # writes <state_dir>/dev.json
    ...
    stack.stop()                  # a few seconds, even with a run in flight

`terrace serve --data DIR` and `make dev` (`terrace dev`) run the embedded stack (`bootstrap.build_embedded`);
`terrace dev --moto` the moto one (`bootstrap.build_aws` against a moto server), for the AWS wiring. The settings
of each backend are made in `stack_settings.py`.

Everything runs on daemon threads, so tests start the same stack in-process. Later pieces (runner
processes, reaper and scaler timers) plug in through `background_tasks`: callables taking the stack,
started on daemon threads once the API answers; they should return when `stack.stopping` is set.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from terrace.adapters.local_runner_launcher import LocalProcessLauncher
from terrace.config import Settings
from terrace.local import api_server, embedded, stack_settings, tls
from terrace.local import workers as local_workers
from terrace.local.dev_file import DEV_FILE
from terrace.local.seed import Seeded, seed_admin
from terrace.local.stack_settings import DUMMY_AWS_ENV
from terrace.local.terraform_config import registry_hostname, write_cli_config
from terrace.wiring.local_resources import LocalResources

DEFAULT_PORT = 8443
DEFAULT_ORGANIZATION = "acme"
STOP_RUNNERS_S = 1.0  # a runner gets this long to finish after SIGTERM at stop; its job is handed back
STOP_THREADS_S = 3.0
log = logging.getLogger("terrace.local")

BackgroundTask = Callable[["LocalStack"], None]
# (table, blobs) -> (table, blobs): applied to the built container before any service is made from it, so every
# service, worker and the embedded blob server use the wrapped ports (the proof suite injects storage faults so)
WrapPorts = Callable[[Any, Any], tuple[Any, Any]]


@dataclass(frozen=True)
class DevInfo:
    """What a client needs to use the stack; written to dev.json."""

    url: str
    hostname: str
    token: str
    organization: str
    ca_bundle: str
    cli_config: str
    registry_hostname: str  # the host of module sources (`<registry_hostname>/<org>/<name>/<provider>`)

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
        data_dir: Path | str | None = None,  # embedded mode (SQLite, blobs, key) when set; moto when None
        host: str = "127.0.0.1",
        public_url: str | None = None,  # how clients reach it; https://localhost:<port> by default
        tls_files: tls.TlsFiles | None = None,  # the operator's certificate (else a local CA's, made once)
        wrap_app: Callable[[Any], Any] | None = None,  # an ASGI wrapper around the app (bench/ records requests)
        wrap_ports: WrapPorts | None = None,  # wrappers around the table and blob store (tests/proof's faults)
    ) -> None:
        self.tls_files = tls_files
        self.wrap_app = wrap_app
        self.wrap_ports = wrap_ports
        self.port = port
        self.data_dir = Path(data_dir).resolve() if data_dir is not None else None
        self.host = host
        self.public_url = public_url.rstrip("/") if public_url else None
        self.organization = organization
        self.state_dir = Path(state_dir).resolve()
        self.prefix = prefix
        self.access_log = access_log
        self.background_tasks: list[BackgroundTask] = list(local_workers.ALL) if workers else []
        self.settings_overrides: dict[str, Any] = {}  # e.g. shorter job timings in tests
        # link the host's terraform and OpenTofu binaries into the runners' catalog (off: they fetch every version)
        self.link_host_tools = True
        self.container: Any = None
        # the runner processes' launcher, made at start before the container (which is built with it) when the
        # stack runs the scaler; stopped with the stack
        self.launcher: LocalProcessLauncher | None = None
        self.stopping = threading.Event()
        self.settings: Settings | None = None
        self.resources: LocalResources | None = None
        self.info: DevInfo | None = None
        self.seeded: Seeded | None = None
        self._moto: Any = None
        self._server: Any = None
        self.listener: socket.socket | None = None  # the API's listening socket while the stack runs
        self._threads: list[threading.Thread] = []

    # lifecycle ---------------------------------------------------------------------------
    def start(self) -> DevInfo:
        """Start moto, seed it, serve the API; write dev.json. Fails early (and cleans up) on a busy port."""
        for key, value in DUMMY_AWS_ENV.items():
            os.environ.setdefault(key, value)  # boto3 needs some credentials; moto accepts any
        self.stopping.clear()
        listener = api_server.listen(self.port, self.host)  # first: a busy port fails before anything else starts
        self.listener = listener
        try:
            self.info = self._start(listener)
        except BaseException:
            listener.close()
            self.stop()
            raise
        described = {**self.info.as_dict(), "pid": os.getpid(), "backend": self.backend, "env": self.env()}
        embedded.write_private(self.dev_file, json.dumps(described, indent=2) + "\n")
        # Job uids may pass through to the provider mirror only: not list the folder, nor read the admin
        # token (dev.json, terraform.rc) or the CA key (tls/).
        self.state_dir.chmod(0o711)
        if (self.state_dir / "tls").is_dir():
            (self.state_dir / "tls").chmod(0o700)
        for task in self.background_tasks:
            self._spawn(task)
        return self.info

    @property
    def backend(self) -> str:
        return "embedded" if self.data_dir is not None else "moto"

    def _start(self, listener: socket.socket) -> DevInfo:
        """Compose the container at once: its settings, the certificate and the runners' launcher (which needs
        both) are made first, then the container is built with the launcher; nothing is attached to it later."""
        from terrace.bootstrap import build_aws, build_embedded

        public_url = self.public_url or f"https://localhost:{listener.getsockname()[1]}"
        hostname = public_url.split("://", 1)[1]
        shared = stack_settings.shared(self.state_dir, self.link_host_tools, self.settings_overrides)
        if self.data_dir is not None:
            settings = stack_settings.of_embedded(public_url, self.data_dir, self.state_dir, shared)
            files = self.tls_files or tls.ensure_certificates(self.state_dir / "tls")
        else:
            self._moto, self.resources, settings = stack_settings.on_moto(public_url, self.prefix, shared)
            files = tls.write_certificates(self.state_dir / "tls")
        if local_workers.scaler in self.background_tasks:
            self.launcher = local_workers.runner_launcher(settings, files.ca_bundle, self.state_dir)
        embedded.guard_link_local(settings)  # before a tenant child can start
        if self.data_dir is not None:
            container = self.container = self._wrapped(build_embedded(settings, launcher=self.launcher))
            saved = embedded.saved_admin_token(container, self.data_dir)
            self.seeded = seed_admin(container, self.organization, token=saved)
            embedded.save_admin_token(self.data_dir, self.seeded.token)
            # the runner processes of the previous server died with it: their jobs go back (retried or errored)
            embedded.hand_back(container, "the server restarted while the job ran")
            embedded.resume_events(container)  # and the events it was handling: again now
        else:
            container = self.container = self._wrapped(build_aws(settings, launcher=self.launcher))
            self.seeded = seed_admin(container, self.organization)
        self.settings = container.settings
        registry = registry_hostname(hostname)
        cli_config = write_cli_config(self.state_dir, hostname, self.seeded.token, aliases=[registry])
        self._serve(container, listener, files)
        return DevInfo(
            url=f"https://{hostname}",
            hostname=hostname,
            token=self.seeded.token,
            organization=self.organization,
            ca_bundle=str(files.ca_bundle),
            cli_config=str(cli_config),
            registry_hostname=registry,
        )

    def _wrapped(self, container: Any) -> Any:
        """The container with `wrap_ports` applied (a fresh one: no service was built from the unwrapped ports)."""
        if self.wrap_ports is None:
            return container
        table, blobs = self.wrap_ports(container.table, container.blobs)
        return dataclasses.replace(container, table=table, blobs=blobs)

    def stop(self) -> None:
        """Stop in a few seconds. Workers first (a scaler tick cannot start runners after they were stopped), then
        runner processes (STOP_RUNNERS_S to finish, then killed and their jobs handed back: retried, or errored if an
        apply had started, as the reaper does for a lost runner on AWS), the API, moto."""
        self.stopping.set()
        if self.container is not None:
            self.container.scaler_wake.set()  # the scaler loop sleeps on its wake-up, not on `stopping`
        deadline = time.monotonic() + STOP_THREADS_S
        for thread in [thread for thread in self._threads if thread.name != "terrace-api"]:
            thread.join(timeout=max(0.1, deadline - time.monotonic()))
        ran = {runner.token_id for runner in self.launcher.started} if self.launcher is not None else set()
        if self.launcher is not None:
            self.launcher.stop_all(timeout_s=STOP_RUNNERS_S)
            self.launcher = None  # a new start makes a new one (and builds a new container with it)
        if self.container is not None:
            self.container.job_signal.close()  # long-polls of runners now gone end at once
        if ran and self.container is not None:
            try:
                embedded.hand_back(self.container, "the server stopped", lambda ref: ref.rpartition("@")[2] in ran)
            except Exception:  # the stop goes on: the next start (or the reaper) hands the jobs back
                log.exception("handing back the stopped runners' jobs failed")
        if self._server is not None:
            self._server.should_exit = True
        deadline = time.monotonic() + STOP_THREADS_S
        for thread in self._threads:
            thread.join(timeout=max(0.1, deadline - time.monotonic()))
        self._threads.clear()
        self._server = None
        if self.listener is not None:  # closed when stop returns, however long the server's thread takes to end
            self.listener.close()
            self.listener = None
        if self.container is not None:
            self.container.close()
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
        """TERRACE_* variables under which Settings.from_env() sees this stack (for child processes); never a secret:
        the embedded server's URL-signing secret is a file of its data folder."""
        if self.settings is None:
            raise RuntimeError("the stack is not started")
        s = self.settings
        if self.data_dir is not None:
            return {"TERRACE_DATA_DIR": str(self.data_dir), "TERRACE_PUBLIC_URL": s.public_url}  # no secret: in DATA
        if self.resources is None:
            raise RuntimeError("the stack is not started")
        return {
            **self.resources.env(),
            "TERRACE_PUBLIC_URL": s.public_url,
            "TERRACE_AWS_ENDPOINT_URL": s.aws_endpoint_url or "",
            "AWS_REGION": s.region,
            **{k: os.environ.get(k, v) for k, v in DUMMY_AWS_ENV.items()},
        }

    # internals ---------------------------------------------------------------------------
    def _serve(self, container: Any, listener: socket.socket, files: tls.TlsFiles) -> None:
        from terrace.web.app import create_app

        app = create_app(container)
        self._server, thread = api_server.start(
            self.wrap_app(app) if self.wrap_app else app, listener, files, access_log=self.access_log
        )
        self._threads.append(thread)
        api_server.wait_started(self._server, thread)

    def _spawn(self, task: BackgroundTask) -> None:
        name = getattr(task, "__name__", "background-task")
        thread = threading.Thread(target=task, args=(self,), name=f"terrace-{name}", daemon=True)
        thread.start()
        self._threads.append(thread)
