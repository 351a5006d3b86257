"""The runner launcher port: starting runners for the backlog, one organization per runner.

The scaler decides how many it wants per organization and records each runner's enrollment code; a launcher
reports which runners are alive (and for which organization) and starts more, each with `runner_environment` of
its credential: never a token; a local process gets its enrollment code, an ECS task not even that (a task's
environment is visible to anyone who may describe it): it proves who it is (`domain/runner_identity.py`).
Implementations: `local_runner_launcher.py` (processes on this machine: the embedded server and `make dev`) and
`ecs_runner_launcher.py` (Fargate tasks, `ecs:RunTask`);
`tests/contract/test_runner_launcher_contract.py` is the contract.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class RunnerCredential:
    """What one runner is started with: a single-use enrollment code it exchanges at start for its token (bound to
    `organization`; `token_id` names it already) and when to stop taking jobs."""

    runner_id: str
    organization: str
    token_id: str
    enrollment_code: str
    retire_at: int  # epoch seconds: take no new job after this (the token expires a phase deadline later)
    keep_warm: bool = False  # a warm runner: waits for jobs until it retires, never exits for being idle
    # the lanes whose jobs it takes (empty: every lane); a runner on interruptible capacity (Fargate Spot) takes
    # speculative plans only, which have no side effects and are simply retried when it is interrupted
    lanes: tuple[str, ...] = ()
    # a runner kept warm (`services/runs/warm_window.py`): exits after this many idle seconds and polls every
    # WARM_POLL_S meanwhile (0: the launcher's usual idle exit and poll). A warm window's runner takes plans only
    # (`lanes`), so it may run on interruptible capacity; one that takes every lane (an apply's) never does
    warm_s: int = 0


WARM_POLL_S = 0.5  # a warm runner's pause between two empty polls: a plan queued meanwhile starts within it


@dataclass(frozen=True)
class LiveRunner:
    organization: str
    token_id: str
    lanes: tuple[str, ...] = ()  # as its credential said (empty: every lane)


class RunnerLauncher(Protocol):
    # True when `launch` names what it started (an ECS task ARN) and a runner can prove it is that: its enrollment
    # is then good only for that identity's proof, and its code never leaves the server
    binds_identity: bool
    # the lanes whose runners this launcher starts on interruptible, cheaper capacity (Fargate Spot: the
    # speculative lane); the scaler starts a runner restricted to its lane for them. Empty: none
    spot_lanes: tuple[str, ...]

    def live(self) -> list[LiveRunner]:
        """Runners started by this launcher that are still alive (or starting)."""
        ...

    def launch(self, credentials: list[RunnerCredential]) -> dict[str, str | None]:
        """Starts one runner per credential; returns the token ids of those started, each with the identity of
        what was started (None when the launcher has none a runner could report)."""
        ...

    def retire(self, organization: str, count: int) -> int:
        """Asks up to `count` runners of `organization` to finish their job and exit; returns how many."""
        ...


def runner_environment(credential: RunnerCredential, *, with_code: bool = True) -> dict[str, str]:
    """What distinguishes one runner from another: its enrollment code (`with_code`: not for a launcher whose
    runners prove who they are instead, an ECS task's environment being readable by anyone who may describe it),
    its id, when to retire."""
    return {
        **({"TERRACE_RUNNER_ENROLLMENT_CODE": credential.enrollment_code} if with_code else {}),
        "TERRACE_RUNNER_ORGANIZATION": credential.organization,
        "TERRACE_RUNNER_ID": credential.runner_id,
        "TERRACE_RUNNER_RETIRE_AT": str(credential.retire_at),
        # a warm runner waits out its window after a job too: no early exit once its run is done
        **({"TERRACE_RUNNER_DONE_EXIT_S": ""} if credential.keep_warm or credential.warm_s else {}),
        **({"TERRACE_RUNNER_IDLE_EXIT_S": "0"} if credential.keep_warm else {}),
        **(
            {"TERRACE_RUNNER_IDLE_EXIT_S": str(credential.warm_s), "TERRACE_RUNNER_POLL_INTERVAL_S": str(WARM_POLL_S)}
            if credential.warm_s
            else {}
        ),
        **({"TERRACE_RUNNER_LANES": ",".join(credential.lanes)} if credential.lanes else {}),
    }
