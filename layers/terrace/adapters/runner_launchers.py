"""Starting runners for the backlog: local processes (`make dev`) or Fargate tasks (`ecs:RunTask`).

The scaler decides how many it wants per organization and mints each runner's token; a launcher reports
which runners are alive (and for which organization) and starts more, one organization per runner.
"""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

log = logging.getLogger("terrace.adapters.runner_launchers")
STARTED_BY = "terrace-scaler"


ORG_TAG = "terrace:organization"
TOKEN_TAG = "terrace:runner-token"


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


class LocalProcessLauncher:
    """Runner processes (`python -m terrace.runner`) on this machine, at most `max_processes` at once.
    Each serves one organization: `runners` keeps which (tests read it)."""

    def __init__(
        self, env: Mapping[str, str], max_processes: int, python: str = sys.executable, args: Sequence[str] = ()
    ) -> None:
        self.env = dict(env)
        self.max_processes = max_processes
        self.python = python
        self.args = list(args)
        self.runners: list[LocalRunner] = []  # alive ones
        self.started: deque[LocalRunner] = deque(maxlen=1000)  # the runners started lately, for bookkeeping

    def _reap(self) -> None:
        alive = []
        for runner in self.runners:
            code = runner.process.poll()
            if code is None:
                alive.append(runner)
            elif code != 0:
                log.warning("runner process %d exited with %d", runner.process.pid, code)
        self.runners = alive

    def live(self) -> list[LiveRunner]:
        self._reap()
        return [LiveRunner(r.organization, r.token_id) for r in self.runners]

    def live_count(self) -> int:
        return len(self.live())

    def launch(self, credentials: list[RunnerCredential]) -> list[str]:
        room = max(0, self.max_processes - self.live_count())
        started = []
        for credential in credentials[:room]:
            process = subprocess.Popen(
                [self.python, "-m", "terrace.runner", *self.args],
                env={**self.env, **runner_environment(credential)},
                stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,  # noqa: PLW1509
            )
            runner = LocalRunner(process, credential.organization, credential.token_id, credential.runner_id)
            self.runners.append(runner)
            self.started.append(runner)
            started.append(credential.token_id)
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
        self.runners = []


class EcsLauncher:
    """Fargate runner tasks started by `terrace-scaler`, tagged with their organization and runner token id."""

    def __init__(
        self,
        ecs_client: Any,
        cluster: str,
        task_definition: str,
        subnets: Sequence[str],
        security_groups: Sequence[str],
        assign_public_ip: bool,
        container_name: str,
        *,
        platform_version: str = "LATEST",
        max_tasks: int | None = None,
        environment: Mapping[str, str] | None = None,
    ) -> None:
        self.ecs = ecs_client
        self.cluster, self.task_definition, self.container_name = cluster, task_definition, container_name
        self.subnets, self.security_groups = list(subnets), list(security_groups)
        self.assign_public_ip = assign_public_ip
        self.platform_version = platform_version
        self.max_tasks = max_tasks
        self.environment = dict(environment or {})

    def _tasks(self) -> list[dict[str, Any]]:
        """Described tasks of the scaler whose desired status is RUNNING (this includes tasks still provisioning)."""
        arns: list[str] = []
        paginator = self.ecs.get_paginator("list_tasks")
        for page in paginator.paginate(cluster=self.cluster, startedBy=STARTED_BY, desiredStatus="RUNNING"):
            arns.extend(page.get("taskArns", []))
        tasks: list[dict[str, Any]] = []
        for start in range(0, len(arns), 100):
            reply = self.ecs.describe_tasks(cluster=self.cluster, tasks=arns[start : start + 100], include=["TAGS"])
            tasks.extend(reply.get("tasks", []))
        return tasks

    def live(self) -> list[LiveRunner]:
        found = []
        for task in self._tasks():
            tags = {tag["key"]: tag["value"] for tag in task.get("tags", [])}
            found.append(LiveRunner(tags.get(ORG_TAG, ""), tags.get(TOKEN_TAG, "")))
        return found

    def live_count(self) -> int:
        return len(self._tasks())

    def launch(self, credentials: list[RunnerCredential]) -> list[str]:
        if self.max_tasks is not None:
            credentials = credentials[: max(0, self.max_tasks - self.live_count())]
        started = []
        for credential in credentials:  # one task per credential: each has its own token
            reply = self.ecs.run_task(**self._run_task_args(credential))
            for failure in reply.get("failures", []):
                log.warning("RunTask failure: %s %s", failure.get("reason"), failure.get("detail", ""))
            if not reply.get("tasks"):
                break  # capacity or quota: the scaler will try again on its next tick
            started.append(credential.token_id)
        return started

    def retire(self, organization: str, count: int) -> int:
        """StopTask: the runner gets SIGTERM, finishes its job if it has one (within the stop timeout), exits."""
        retired = 0
        for task in self._tasks():
            tags = {tag["key"]: tag["value"] for tag in task.get("tags", [])}
            if retired < count and tags.get(ORG_TAG) == organization:
                self.ecs.stop_task(cluster=self.cluster, task=task["taskArn"], reason="idle: room for another org")
                retired += 1
        return retired

    def _run_task_args(self, credential: RunnerCredential) -> dict[str, Any]:
        args: dict[str, Any] = {
            "cluster": self.cluster,
            "taskDefinition": self.task_definition,
            "count": 1,
            "launchType": "FARGATE",
            "platformVersion": self.platform_version,
            "startedBy": STARTED_BY,
            "tags": [
                {"key": ORG_TAG, "value": credential.organization},
                {"key": TOKEN_TAG, "value": credential.token_id},
            ],
            "networkConfiguration": {
                "awsvpcConfiguration": {
                    "subnets": self.subnets,
                    "securityGroups": self.security_groups,
                    "assignPublicIp": "ENABLED" if self.assign_public_ip else "DISABLED",
                }
            },
        }
        env = {**self.environment, **runner_environment(credential)}
        variables = [{"name": k, "value": v} for k, v in sorted(env.items())]
        args["overrides"] = {"containerOverrides": [{"name": self.container_name, "environment": variables}]}
        return args
