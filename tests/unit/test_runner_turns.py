"""Organizations take turns on the runners (`services/runs/runner_turns.py`). The proof's load runs found one
organization's runners serving its whole backlog while others waited minutes with none: a runner that has done
a job is now told to hand its slot over when every slot is held and another organization waits, and the
dispatcher gives the freed slot to the organization whose turn is oldest."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import httpx
import pytest
from run_helpers import make_run_env
from runner_fakes import make_spec
from terrace.adapters.lanes import LaneDelivery, LaneMessage
from terrace.domain import clock
from terrace.domain.jobs import HAND_OVER_HEADER, FinishRequest, JobSpec
from terrace.runner.client import HandOver, RunnerApi
from terrace.runner.config import RunnerConfig
from terrace.runner.main import Runner
from terrace.services.runs import runner_turns
from terrace.services.runs.runner_turns import WAIT_S, take_turns, yields


def _ago(seconds: float) -> str:
    return datetime.fromtimestamp(clock.epoch() - seconds, UTC).isoformat().replace("+00:00", "Z")


def _entry(org: str, status: str, waited_s: float = 60.0, pool: str = "") -> dict[str, str]:
    return {"organization": org, "status": status, "queued_at": _ago(waited_s), "agent_pool_id": pool}


def test_a_runner_hands_over_to_an_organization_waiting_with_none_running() -> None:
    entries = [_entry("a", "planning"), _entry("a", "plan_queued"), _entry("b", "plan_queued")]
    assert yields("a", entries)
    assert not yields("b", entries)  # b is the one waiting


def test_no_hand_over_for_a_short_wait_a_served_organization_or_an_agent_pool() -> None:
    assert not yields("a", [_entry("a", "planning"), _entry("b", "plan_queued", waited_s=WAIT_S / 4)])
    assert not yields("a", [_entry("a", "planning"), _entry("b", "plan_queued"), _entry("b", "applying")])
    assert not yields("a", [_entry("a", "planning"), _entry("b", "plan_queued", pool="apool-1")])
    assert not yields("a", [_entry("a", "planning")])


def test_hand_over_keeps_the_lanes_order() -> None:
    own_apply = [_entry("a", "planning"), _entry("a", "apply_queued"), _entry("b", "plan_queued")]
    assert not yields("a", own_apply)  # a's apply goes before b's plan
    their_apply = [_entry("a", "planning"), _entry("a", "plan_queued"), _entry("b", "apply_queued")]
    assert yields("a", their_apply)


def _delivery(org: str, n: int) -> LaneDelivery:
    return LaneDelivery("plan", LaneMessage(org, f"job-{org}-{n}", f"run-{org}-{n}", "plan"), f"r-{org}-{n}", 1)


def test_within_a_round_the_organization_whose_turn_is_oldest_goes_first() -> None:
    sent = [_delivery("a", 1), _delivery("a", 2), _delivery("b", 1), _delivery("c", 1)]
    plain = [d.message.job_id for d in take_turns(sent)]
    assert plain == ["job-a-1", "job-b-1", "job-c-1", "job-a-2"]
    turns = {"a": 3000.0, "b": 1000.0}  # c never had a runner; b's turn is older than a's
    ordered = [d.message.job_id for d in take_turns(sent, turns)]
    assert ordered == ["job-c-1", "job-b-1", "job-a-1", "job-a-2"]


def test_the_api_tells_a_runner_that_served_to_hand_over_when_slots_are_full(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner_turns, "WAIT_S", 0.0)  # acme's run waits from the moment it is queued
    env = make_run_env()
    env.api(
        "POST", "/organizations", {"data": {"type": "organizations", "attributes": {"name": "globex", "email": "g@x"}}}
    )
    env.create_run(env.upload_config())  # acme's plan, queued, no runner of acme running
    globex = env.container.runner_credentials.runner_token("globex")
    ask = {"runner_id": "g1", "served": 1}

    answer = env.runner("POST", "/jobs/next", json=ask, token=globex)
    assert answer.status_code == 204 and HAND_OVER_HEADER not in answer.headers  # slots free: no need

    slots = env.container.runner_slots
    for n in range(env.container.settings.max_runners):
        assert slots.acquire(f"lease-{n}", "globex")
    answer = env.runner("POST", "/jobs/next", json=ask, token=globex)
    assert answer.status_code == 204 and answer.headers.get(HAND_OVER_HEADER) == "1"

    fresh = env.runner("POST", "/jobs/next", json={"runner_id": "g2"}, token=globex)  # served none: its first job
    assert fresh.status_code == 204 and HAND_OVER_HEADER not in fresh.headers
    assert env.runner("POST", "/jobs/next", json={"runner_id": "g1", "served": -1}, token=globex).status_code == 422


def test_the_runner_client_sends_what_it_served_and_exits_when_told_to_hand_over() -> None:
    asked: list[dict[str, object]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.read())
        asked.append(body)
        if request.url.path.endswith("/jobs/next") and body.get("served"):
            return httpx.Response(204, headers={HAND_OVER_HEADER: "1"})
        return httpx.Response(204)

    api = RunnerApi("https://terrace.test", "tok", "r1", transport=httpx.MockTransport(handler), retry_delays=(0.01,))
    assert api.next(0) is None
    with pytest.raises(HandOver):
        api.next(0, served=2)
    assert [a.get("served") for a in asked] == [None, 2]  # the default is left out of the body


class _Executor:
    def __init__(self) -> None:
        self.ran: list[str] = []
        self.cache = type("Cache", (), {"holds": staticmethod(lambda run_id: False)})()

    def execute(self, spec: JobSpec, keep_for_apply: bool) -> FinishRequest:
        self.ran.append(spec.job_id)
        return FinishRequest(runner_id="r1", status="finished")

    def tidy(self) -> None:
        pass


class _Api:
    def __init__(self, spec: JobSpec) -> None:
        self.spec, self.asked, self.finished = spec, [], []  # type: ignore[var-annotated]

    def next(self, wait_s: float, served: int = 0) -> JobSpec | None:
        self.asked.append(served)
        if served:
            raise HandOver
        return self.spec

    def finish(self, report: FinishRequest, job_id: str) -> None:
        self.finished.append(job_id)


def test_a_runner_told_to_hand_over_exits_after_its_job() -> None:
    api, executor = _Api(make_spec("plan")), _Executor()
    config = RunnerConfig(api_url="https://terrace.test", runner_token="tok", runner_id="r1", wait_s=0)
    runner = Runner(config, api, executor)  # type: ignore[arg-type]
    assert runner.loop() == 0
    assert executor.ran == ["plan-abc"] and api.finished == ["plan-abc"]
    assert api.asked == [0, 1]
