"""A runner started for Fargate Spot (`TERRACE_RUNNER_LANES=speculative`): it asks the runner API for speculative
plans only, and its loop hands a plan in flight back on SIGTERM (an interruption's two-minute warning) instead of
finishing it; any other runner finishes its job. (tests/unit/test_dispatcher_lanes.py: what the API does with both.)"""

from __future__ import annotations

import json

import httpx
from terrace.runner.client import RunnerApi
from terrace.runner.config import RunnerConfig
from terrace.runner.hand_back import HandBackRunner
from terrace.runner.main import Runner, build_runner

BASE = {"TERRACE_API_URL": "https://terrace.example", "TERRACE_RUNNER_TOKEN": "at-x"}


def test_a_spot_runner_asks_for_speculative_plans_only_and_hands_back_on_sigterm() -> None:
    spot = build_runner(RunnerConfig.from_env({**BASE, "TERRACE_RUNNER_LANES": "speculative"}))
    plain = build_runner(RunnerConfig.from_env(BASE))
    assert isinstance(spot, HandBackRunner) and not isinstance(plain, HandBackRunner) and isinstance(plain, Runner)
    bodies: list[dict[str, object]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(204)

    for lanes in (("speculative",), ()):
        api = RunnerApi("https://terrace.example", "at-x", "r1", transport=httpx.MockTransport(answer), lanes=lanes)
        assert api.next(0) is None
    assert bodies == [{"runner_id": "r1", "lanes": ["speculative"]}, {"runner_id": "r1"}]


def test_a_spot_runner_hands_its_plan_back_on_sigterm() -> None:
    """SIGTERM mid-plan (an interruption's warning): terraform is killed and the plan released, not reported."""
    from runner_fakes import make_spec
    from test_agent_program import _Api, _Executor

    holder: list[Runner] = []
    api = _Api()
    runner = build_runner(RunnerConfig.from_env({**BASE, "TERRACE_RUNNER_LANES": "speculative"}))
    runner.api, runner.executor = api, _Executor(holder)  # type: ignore[assignment]
    holder.append(runner)
    runner.handle(make_spec("plan"))
    runner.wait_for_reports()
    assert (api.released, api.finished) == ([make_spec("plan").job_id], [])
