"""Starting runners for the backlog: local processes (`make dev`) or Fargate tasks (`ecs:RunTask`).

The scaler decides how many it wants; a launcher reports how many are alive and starts more.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

log = logging.getLogger("terrace.adapters.runner_launchers")
STARTED_BY = "terrace-scaler"
ECS_BATCH = 10  # RunTask starts at most 10 tasks per call


class RunnerLauncher(Protocol):
    def live_count(self) -> int:
        """Runners started by this launcher that are still alive (or starting)."""
        ...

    def launch(self, count: int) -> int:
        """Starts up to `count` runners; returns how many were started."""
        ...


class LocalProcessLauncher:
    """Runner processes (`python -m terrace.runner`) on this machine, at most `max_processes` at once."""

    def __init__(
        self, env: Mapping[str, str], max_processes: int, python: str = sys.executable, args: Sequence[str] = ()
    ) -> None:
        self.env = dict(env)
        self.max_processes = max_processes
        self.python = python
        self.args = list(args)
        self._procs: list[subprocess.Popen[bytes]] = []

    def _reap(self) -> None:
        alive = []
        for proc in self._procs:
            code = proc.poll()
            if code is None:
                alive.append(proc)
            elif code != 0:
                log.warning("runner process %d exited with %d", proc.pid, code)
        self._procs = alive

    def live_count(self) -> int:
        self._reap()
        return len(self._procs)

    def launch(self, count: int) -> int:
        room = max(0, min(count, self.max_processes - self.live_count()))
        for _ in range(room):
            self._procs.append(
                subprocess.Popen(
                    [self.python, "-m", "terrace.runner", *self.args], env=self.env, stdin=subprocess.DEVNULL
                )
            )
        return room

    def stop_all(self, timeout_s: float = 10.0) -> None:
        """SIGTERM (a runner finishes its current job), then SIGKILL whatever is left after the timeout."""
        for proc in self._procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self._procs:
            try:
                proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._procs = []


class EcsLauncher:
    """Fargate runner tasks tagged `startedBy=terrace-scaler`."""

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

    def live_count(self) -> int:
        """Tasks whose desired status is RUNNING (this includes tasks still provisioning)."""
        count = 0
        paginator = self.ecs.get_paginator("list_tasks")
        for page in paginator.paginate(cluster=self.cluster, startedBy=STARTED_BY, desiredStatus="RUNNING"):
            count += len(page.get("taskArns", []))
        return count

    def launch(self, count: int) -> int:
        if self.max_tasks is not None:
            count = min(count, self.max_tasks - self.live_count())
        started = 0
        while started < count:
            batch = min(ECS_BATCH, count - started)
            reply = self.ecs.run_task(**self._run_task_args(batch))
            for failure in reply.get("failures", []):
                log.warning("RunTask failure: %s %s", failure.get("reason"), failure.get("detail", ""))
            got = len(reply.get("tasks", []))
            started += got
            if got < batch:
                break  # capacity or quota: the scaler will try again on its next tick
        return started

    def _run_task_args(self, batch: int) -> dict[str, Any]:
        args: dict[str, Any] = {
            "cluster": self.cluster,
            "taskDefinition": self.task_definition,
            "count": batch,
            "launchType": "FARGATE",
            "platformVersion": self.platform_version,
            "startedBy": STARTED_BY,
            "networkConfiguration": {
                "awsvpcConfiguration": {
                    "subnets": self.subnets,
                    "securityGroups": self.security_groups,
                    "assignPublicIp": "ENABLED" if self.assign_public_ip else "DISABLED",
                }
            },
        }
        if self.environment:
            env = [{"name": k, "value": v} for k, v in sorted(self.environment.items())]
            args["overrides"] = {"containerOverrides": [{"name": self.container_name, "environment": env}]}
        return args
