"""Runners as Fargate tasks started by `terrace-scaler` (`ecs:RunTask`): the runner launcher
(`runner_launcher.py`) on AWS, tagged with each runner's organization and token id.

A task's environment carries no token and no enrollment code (DescribeTasks shows it); `launch` names each started
task by its ARN, to which the scaler binds the runner's enrollment, and the runner proves it is that task with a
GetCallerIdentity signed by its task role (`domain/runner_identity.py`). A RunTask that fails (a `failures`
entry, a throttled or refused call) is tried again `RUN_TASK_ATTEMPTS` times with a back-off; what still fails is
counted in `failures` (the scaler Lambda publishes it as the `RunTaskFailures` metric) and logged.

Capacity: a runner restricted to `spot_lanes` (the speculative lane: plans with no side effects), and a warm
window's runner (plans only), starts on FARGATE_SPOT; every other one on FARGATE (`capacityProviderStrategy`; the
cluster has both providers). ECS has no fallback of its own between them (a strategy's weights share tasks out, they
do not fail over), so when Spot refuses a task (`Capacity is unavailable at this time`, or any other failure or
error) the launcher asks FARGATE at once. A task is tagged with its lanes, so `live` tells a Spot runner from one
that takes any job."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tenacity import RetryCallState, Retrying, retry_if_result, stop_after_attempt

from terrace.adapters.runner_launcher import LiveRunner, RunnerCredential, runner_environment

log = logging.getLogger("terrace.adapters.runner_launchers")
STARTED_BY = "terrace-scaler"
ORG_TAG = "terrace:organization"
TOKEN_TAG = "terrace:runner-token"
LANES_TAG = "terrace:lanes"  # "speculative", or "all"
FARGATE, FARGATE_SPOT = "FARGATE", "FARGATE_SPOT"
RUN_TASK_ATTEMPTS = 3
RUN_TASK_BACKOFF_S = 0.5


class EcsLauncher:
    """Fargate runner tasks started by `terrace-scaler`, tagged with their organization and runner token id."""

    binds_identity = True  # a runner reads its task ARN from the metadata endpoint and proves it with its task role

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
        spot_lanes: Sequence[str] = (),
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.ecs = ecs_client
        self.cluster, self.task_definition, self.container_name = cluster, task_definition, container_name
        self.subnets, self.security_groups = list(subnets), list(security_groups)
        self.assign_public_ip = assign_public_ip
        self.platform_version = platform_version
        self.max_tasks = max_tasks
        self.environment = dict(environment or {})
        self.failures = 0  # RunTask calls that failed after their retries, since this launcher was made
        self.backoff_s = RUN_TASK_BACKOFF_S  # after the nth failed try: n times this
        self._sleep = sleep
        self.spot_lanes = tuple(spot_lanes)
        self.spot_fallbacks = 0  # Spot launches that went to FARGATE instead, since this launcher was made

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
            lanes = tags.get(LANES_TAG, "all")
            found.append(
                LiveRunner(
                    tags.get(ORG_TAG, ""), tags.get(TOKEN_TAG, ""), () if lanes == "all" else tuple(lanes.split(","))
                )
            )
        return found

    def live_count(self) -> int:
        return len(self._tasks())

    def launch(self, credentials: list[RunnerCredential]) -> dict[str, str | None]:
        if self.max_tasks is not None:
            credentials = credentials[: max(0, self.max_tasks - self.live_count())]
        started: dict[str, str | None] = {}
        for credential in credentials:  # one task per credential: each has its own enrollment code
            arn = self._run_task(credential)
            if arn is None:
                self.failures += 1
                break  # capacity or quota: the scaler will try again on its next tick
            started[credential.token_id] = arn
        return started

    def capacity_of(self, credential: RunnerCredential) -> str:
        """FARGATE_SPOT for a runner that takes only lanes run on Spot, or a warm window's runner (it takes plans
        only, handed back when interrupted); FARGATE for any other."""
        spot = bool(credential.lanes) and (set(credential.lanes) <= set(self.spot_lanes) or credential.warm_s > 0)
        return FARGATE_SPOT if spot else FARGATE

    def _run_task(self, credential: RunnerCredential) -> str | None:
        """The started task's ARN, after up to RUN_TASK_ATTEMPTS tries; None when every try failed. A Spot
        launch that fails goes to FARGATE at once (ECS would not fall back by itself)."""
        capacity = self.capacity_of(credential)
        tries, fell_back = 0, False  # fell_back: the try that just failed was on Spot; the next goes to FARGATE

        def attempt() -> str | None:
            nonlocal tries, capacity, fell_back
            tries, fell_back = tries + 1, False
            try:
                reply = self.ecs.run_task(**self._run_task_args(credential, capacity))
            except Exception as exc:  # throttled, refused, unreachable: botocore's own retries are spent
                log.warning("RunTask attempt %d (%s) for %s failed: %s", tries, capacity, credential.organization, exc)
            else:
                tasks = reply.get("tasks") or []
                if tasks:
                    return str(tasks[0]["taskArn"])
                for failure in reply.get("failures", []):
                    log.warning(
                        "RunTask attempt %d (%s) failure: %s %s",
                        tries, capacity, failure.get("reason"), failure.get("detail", ""),
                    )  # fmt: skip
            if capacity == FARGATE_SPOT:
                log.warning("no Fargate Spot task for a runner of %s: starting it on FARGATE", credential.organization)
                capacity, fell_back = FARGATE, True
                self.spot_fallbacks += 1
            return None

        def wait(state: RetryCallState) -> float:  # at once after Spot: its capacity is not coming back so soon
            return 0.0 if fell_back else self.backoff_s * state.attempt_number

        arn: str | None = Retrying(
            stop=stop_after_attempt(RUN_TASK_ATTEMPTS),
            wait=wait,
            retry=retry_if_result(lambda started: started is None),
            retry_error_callback=lambda state: None,
            sleep=self._sleep,
        )(attempt)
        if arn is not None:
            return arn
        log.error("RunTask failed %d times for a runner of %s", RUN_TASK_ATTEMPTS, credential.organization)
        return None

    def retire(self, organization: str, count: int) -> int:
        """StopTask: the runner gets SIGTERM, finishes its job if it has one (within the stop timeout), exits."""
        retired = 0
        for task in self._tasks():
            tags = {tag["key"]: tag["value"] for tag in task.get("tags", [])}
            if retired < count and tags.get(ORG_TAG) == organization:
                self.ecs.stop_task(cluster=self.cluster, task=task["taskArn"], reason="idle: room for another org")
                retired += 1
        return retired

    def _run_task_args(self, credential: RunnerCredential, capacity: str = FARGATE) -> dict[str, Any]:
        args: dict[str, Any] = {
            "cluster": self.cluster,
            "taskDefinition": self.task_definition,
            "count": 1,
            "capacityProviderStrategy": [{"capacityProvider": capacity, "weight": 1}],  # instead of a launchType
            "platformVersion": self.platform_version,
            "startedBy": STARTED_BY,
            "tags": [
                {"key": ORG_TAG, "value": credential.organization},
                {"key": TOKEN_TAG, "value": credential.token_id},
                {"key": LANES_TAG, "value": ",".join(credential.lanes) or "all"},
            ],
            "networkConfiguration": {
                "awsvpcConfiguration": {
                    "subnets": self.subnets,
                    "securityGroups": self.security_groups,
                    "assignPublicIp": "ENABLED" if self.assign_public_ip else "DISABLED",
                }
            },
        }
        env = {**self.environment, **runner_environment(credential, with_code=False)}  # the task proves who it is
        variables = [{"name": k, "value": v} for k, v in sorted(env.items())]
        args["overrides"] = {"containerOverrides": [{"name": self.container_name, "environment": variables}]}
        return args
