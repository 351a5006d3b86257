"""A runner whose run's work is done (it served a job and holds no plan's folder for the apply) exits after
`TERRACE_RUNNER_DONE_EXIT_S` (on Fargate 0: at its first empty answer) instead of idling out its whole tail; one that
holds a plan for its apply, one just started, and a warm runner wait as before (`runner/main.py`)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from runner_fakes import make_spec, runner_config
from terrace.adapters.runner_launcher import RunnerCredential, runner_environment
from terrace.runner.config import ConfigError, RunnerConfig
from terrace.runner.main import Runner


class _Cache:
    def __init__(self) -> None:
        self.held: set[str] = set()

    def __len__(self) -> int:
        return len(self.held)

    def holds(self, run_id: str) -> bool:
        return run_id in self.held


class _Executor:
    """Runs a job in no time; `hold` keeps the plan's folder for its apply, as a plan to be confirmed does."""

    def __init__(self, hold: bool) -> None:
        self.cache, self.hold = _Cache(), hold

    def execute(self, spec: Any, keep_for_apply: bool = False) -> Any:
        if self.hold and keep_for_apply:
            self.cache.held.add(spec.run_id)
        return SimpleNamespace(status="finished")

    def settled(self, spec: Any, answer: Any) -> None:
        pass

    def tidy(self) -> None:
        pass


class _Api:
    """One job, then empty answers; every ask is a poll (an API request)."""

    def __init__(self, jobs: int) -> None:
        self.jobs, self.polls = [make_spec("plan")] * jobs, 0

    def next(self, wait_s: float, served: int = 0) -> Any:
        self.polls += 1
        return self.jobs.pop() if self.jobs else None

    def finish(self, report: Any, job_id: str) -> None:
        return None


def _polls(tmp_path: Path, *, jobs: int = 1, hold: bool = False, **config: Any) -> tuple[int, float]:
    """(the runner's polls, its idle seconds after its last job) until it exits: short polls every 2 s."""
    now = [0.0]
    settings = runner_config(tmp_path, tmp_path / "terraform", wait_s=0, poll_interval_s=2.0, brisk_window_s=0,
                             idle_exit_s=10, **config)  # fmt: skip
    api = _Api(jobs)

    def sleep(seconds: float) -> None:
        now[0] += seconds

    runner = Runner(settings, api, _Executor(hold), clock=lambda: now[0], sleep=sleep)  # type: ignore[arg-type]
    assert runner.loop() == 0
    return api.polls, now[0]


def test_a_runner_whose_run_is_done_exits_at_its_first_empty_answer(tmp_path: Path) -> None:
    assert _polls(tmp_path, done_exit_s=0) == (2, 0.0)  # the claim, one empty answer: no idle tail
    assert _polls(tmp_path, done_exit_s=4) == (4, 4.0)  # a tail of its own


def test_without_a_done_exit_and_while_a_plan_waits_for_its_apply_the_idle_tail_stays(tmp_path: Path) -> None:
    assert _polls(tmp_path) == (7, 10.0)  # as before: polls every 2 s for 10 s
    assert _polls(tmp_path, hold=True, done_exit_s=0) == (7, 10.0)  # the apply of its plan may come
    assert _polls(tmp_path, jobs=0, done_exit_s=0) == (6, 10.0)  # started for a job: it waits for one


def test_the_done_exit_is_read_from_the_environment(tmp_path: Path) -> None:
    env = {"TERRACE_API_URL": "https://api", "TERRACE_RUNNER_TOKEN": "t", "TERRACE_TF_BINARY": "/bin/true"}
    assert RunnerConfig.from_env(env).done_exit_s is None
    assert RunnerConfig.from_env({**env, "TERRACE_RUNNER_DONE_EXIT_S": ""}).done_exit_s is None
    assert RunnerConfig.from_env({**env, "TERRACE_RUNNER_DONE_EXIT_S": "0"}).done_exit_s == 0.0
    with pytest.raises(ConfigError, match="TERRACE_RUNNER_DONE_EXIT_S"):
        RunnerConfig.from_env({**env, "TERRACE_RUNNER_DONE_EXIT_S": "soon"})


@pytest.mark.parametrize(("keep_warm", "warm_s"), [(True, 0), (False, 900)])
def test_a_warm_runner_waits_out_its_window_after_a_job(keep_warm: bool, warm_s: int) -> None:
    credential = RunnerCredential("r1", "acme", "tok", "code", 0, keep_warm=keep_warm, warm_s=warm_s)
    assert runner_environment(credential)["TERRACE_RUNNER_DONE_EXIT_S"] == ""  # overrides the task's 0
    assert "TERRACE_RUNNER_DONE_EXIT_S" not in runner_environment(RunnerCredential("r2", "acme", "t", "c", 0))
