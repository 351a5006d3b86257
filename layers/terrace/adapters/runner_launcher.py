"""The runner launcher port: starting runners for the backlog, one organization per runner.

The scaler decides how many it wants per organization and mints each runner's token; a launcher reports
which runners are alive (and for which organization) and starts more, each with `runner_environment` of its
credential. Implementations: `local_runner_launcher.py` (processes on this machine: the embedded server and
`make dev`) and `ecs_runner_launcher.py` (Fargate tasks, `ecs:RunTask`);
`tests/contract/test_runner_launcher_contract.py` is the contract.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class RunnerCredential:
    """What one runner is started with: its token (bound to `organization`) and when to stop taking jobs."""

    runner_id: str
    organization: str
    token_id: str
    token: str
    retire_at: int  # epoch seconds: take no new job after this (the token expires a phase deadline later)
    keep_warm: bool = False  # a warm runner: waits for jobs until it retires, never exits for being idle


@dataclass(frozen=True)
class LiveRunner:
    organization: str
    token_id: str


class RunnerLauncher(Protocol):
    def live(self) -> list[LiveRunner]:
        """Runners started by this launcher that are still alive (or starting)."""
        ...

    def launch(self, credentials: list[RunnerCredential]) -> list[str]:
        """Starts one runner per credential; returns the token ids of those started."""
        ...

    def retire(self, organization: str, count: int) -> int:
        """Asks up to `count` runners of `organization` to finish their job and exit; returns how many."""
        ...


def runner_environment(credential: RunnerCredential) -> dict[str, str]:
    """What distinguishes one runner from another: its organization's token, its id, when to retire."""
    return {
        "TERRACE_RUNNER_TOKEN": credential.token,
        "TERRACE_RUNNER_ORGANIZATION": credential.organization,
        "TERRACE_RUNNER_ID": credential.runner_id,
        "TERRACE_RUNNER_RETIRE_AT": str(credential.retire_at),
        **({"TERRACE_RUNNER_IDLE_EXIT_S": "0"} if credential.keep_warm else {}),
    }
