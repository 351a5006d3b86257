"""Runners as local processes (`python -m terrace.runner`): the runner launcher (`runner_launcher.py`) of the
embedded server and `make dev`."""

from __future__ import annotations

import logging
import shutil
import signal
import subprocess
import sys
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from terrace.adapters.runner_launcher import LiveRunner, RunnerCredential, runner_environment

log = logging.getLogger("terrace.adapters.runner_launchers")


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when the server that started it dies (a crash leaves no runner
    working for a server that is gone; the restarted server hands its job back)."""
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)


@dataclass
class LocalRunner:
    process: subprocess.Popen[bytes]
    organization: str
    token_id: str
    runner_id: str
    lanes: tuple[str, ...] = ()
    work_dir: Path | None = None  # its own folder of TERRACE_WORK_DIR, removed once it exited


WORK_DIR = "TERRACE_WORK_DIR"


class LocalProcessLauncher:
    """Runner processes (`python -m terrace.runner`) on this machine, at most `max_processes` at once.
    Each serves one organization: `runners` keeps which (tests read it).

    Enrollment codes are not bound to an identity here: the code reaches the child only through its environment,
    which only the server's own user can read (`/proc/<pid>/environ` is 0400), and a process identity the runner
    reported (its pid) could be forged by any process of that user, who can read the server's data anyway.

    With TERRACE_WORK_DIR in `env`, each runner works in a folder of its own below it (`<work dir>/<token id>`),
    removed once the runner exited, however it ended: a runner killed mid-job (SIGKILL, OOM) cannot remove its
    job folders itself. What the runners of an earlier server left there (they died with it) goes at the start."""

    binds_identity = False
    spot_lanes: tuple[str, ...] = ()  # no interruptible capacity here: a runner takes every lane

    def __init__(
        self, env: Mapping[str, str], max_processes: int, python: str = sys.executable, args: Sequence[str] = ()
    ) -> None:
        self.env = dict(env)
        self.max_processes = max_processes
        self.python = python
        self.args = list(args)
        self.runners: list[LocalRunner] = []  # alive ones
        self.started: deque[LocalRunner] = deque(maxlen=1000)  # the runners started lately, for bookkeeping
        self.work_root = Path(self.env[WORK_DIR]) if self.env.get(WORK_DIR) else None
        if self.work_root is not None:
            self.work_root.mkdir(mode=0o711, parents=True, exist_ok=True)
            for leftover in self.work_root.iterdir():  # no runner of this launcher has started yet
                _remove(leftover)

    def _reap(self) -> None:
        alive = []
        for runner in self.runners:
            code = runner.process.poll()
            if code is None:
                alive.append(runner)
                continue
            if code != 0:
                log.warning("runner process %d exited with %d", runner.process.pid, code)
            _remove(runner.work_dir)
        self.runners = alive

    def live(self) -> list[LiveRunner]:
        self._reap()
        return [LiveRunner(r.organization, r.token_id, r.lanes) for r in self.runners]

    def live_count(self) -> int:
        return len(self.live())

    def launch(self, credentials: list[RunnerCredential]) -> dict[str, str | None]:
        room = max(0, self.max_processes - self.live_count())
        started: dict[str, str | None] = {}
        for credential in credentials[:room]:
            work_dir = self.work_root / credential.token_id if self.work_root is not None else None
            own = {WORK_DIR: str(work_dir)} if work_dir is not None else {}
            process = subprocess.Popen(
                [self.python, "-m", "terrace.runner", *self.args],
                env={**self.env, **own, **runner_environment(credential)},
                stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,  # noqa: PLW1509
            )
            runner = LocalRunner(
                process,
                credential.organization,
                credential.token_id,
                credential.runner_id,
                lanes=credential.lanes,
                work_dir=work_dir,
            )
            self.runners.append(runner)
            self.started.append(runner)
            started[credential.token_id] = None
        return started

    def retire(self, organization: str, count: int) -> int:
        """SIGTERM: the runner finishes the job it has (if any) and exits."""
        self._reap()
        retired = 0
        for runner in self.runners:
            if retired < count and runner.organization == organization and runner.process.poll() is None:
                runner.process.terminate()
                retired += 1
        return retired

    def stop_all(self, timeout_s: float = 10.0) -> None:
        """SIGTERM (a runner finishes its current job), then SIGKILL whatever is left after the timeout."""
        for runner in self.runners:
            if runner.process.poll() is None:
                runner.process.terminate()
        for runner in self.runners:
            try:
                runner.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                runner.process.kill()
                runner.process.wait()
            _remove(runner.work_dir)
        self.runners = []


def _remove(folder: Path | None) -> None:
    """A dead runner's folder (its jobs' processes died with it: their PID namespace went down with the runner)."""
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
