"""RunTask failures are retried, then counted (the scaler Lambda publishes them as `RunTaskFailures`), and the
scaler gives the slot and the enrollment code of a runner that never started back."""

from __future__ import annotations

from typing import Any

from terrace.adapters.ecs_runner_launcher import RUN_TASK_ATTEMPTS, EcsLauncher
from terrace.adapters.runner_launcher import RunnerCredential

ARN = "arn:aws:ecs:us-east-1:123456789012:task/terrace/abc"


class FakeEcs:
    """RunTask answering `replies` in turn (an exception is raised); no task is ever listed."""

    def __init__(self, replies: list[Any]) -> None:
        self.replies, self.calls = list(replies), 0

    def run_task(self, **_: Any) -> dict[str, Any]:
        self.calls += 1
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return dict(reply)


def launcher(ecs: FakeEcs) -> EcsLauncher:
    made = EcsLauncher(ecs, "cluster", "taskdef", ["subnet"], ["sg"], False, "runner")
    made.backoff_s = 0
    return made


CREDENTIAL = RunnerCredential("runner-1", "acme", "at-1", "tre.code", 1234)


def test_a_failed_run_task_is_tried_again() -> None:
    ecs = FakeEcs(
        [
            {"tasks": [], "failures": [{"reason": "RESOURCE:ENI"}]},
            RuntimeError("throttled"),
            {"tasks": [{"taskArn": ARN}]},
        ]
    )
    made = launcher(ecs)
    assert made.launch([CREDENTIAL]) == {"at-1": ARN}
    assert ecs.calls == 3 and made.failures == 0


def test_a_run_task_failing_every_try_is_counted() -> None:
    ecs = FakeEcs([{"tasks": [], "failures": [{"reason": "RESOURCE:CPU"}]}] * RUN_TASK_ATTEMPTS)
    made = launcher(ecs)
    assert made.launch([CREDENTIAL]) == {}
    assert ecs.calls == RUN_TASK_ATTEMPTS and made.failures == 1
