"""The job queue port (adapters/job_queue.py) on the in-memory table and on DynamoDB (moto): one contract.
And the runner loop over /api/runner/jobs/next (a fake API): it runs what it is handed, stops on a refused token."""

from __future__ import annotations

import io
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from aws import clients, create_table_and_bucket
from terrace.adapters.dynamo_table import DynamoTable
from terrace.adapters.memory_table import MemoryTable
from terrace.adapters.sqlite_table import SqliteDatabase, SqliteTable
from terrace.adapters.table import Table
from terrace.adapters.table_job_queue import TableJobQueue
from terrace.domain.jobs import Operation

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from runner_fakes import FakeApi, fake_terraform, make_spec, runner_config, tarball  # noqa: E402
from terrace.runner.execution import JobExecutor  # noqa: E402
from terrace.runner.main import Runner  # noqa: E402


@pytest.fixture(params=["memory", "sqlite", "dynamodb"])
def table(request: pytest.FixtureRequest, tmp_path: Path) -> Table:
    if request.param == "memory":
        return MemoryTable()
    if request.param == "sqlite":
        return SqliteTable(SqliteDatabase(tmp_path / "terrace.db"))
    made = clients(request.getfixturevalue("endpoint"))
    return DynamoTable(made["dynamodb"], create_table_and_bucket(made).table_name)


def job(job_id: str, phase: str = "plan", attempt: int = 1) -> dict[str, Any]:
    return {"job_id": job_id, "run_id": "run-1", "phase": phase, "attempt": attempt}


def test_lanes_in_priority_order_per_organization(table: Table) -> None:
    queue = TableJobQueue(table)
    queue.enqueue("acme", "speculative", job("plan-spec"))
    queue.enqueue("acme", "plan", job("plan-1"))
    queue.enqueue("other", "apply", job("apply-other", "apply"))
    queue.enqueue("acme", "apply", job("apply-1", "apply"))  # enqueued last, taken first
    taken = [queue.take("acme") for _ in range(3)]
    assert [(q.lane, q.job_id) for q in taken if q] == [
        ("apply", "apply-1"),
        ("plan", "plan-1"),
        ("speculative", "plan-spec"),
    ]
    assert queue.take("acme") is None
    assert [q.job_id for q in queue.queued("other")] == ["apply-other"]


def test_a_delayed_job_waits_and_a_retry_is_a_new_entry(table: Table) -> None:
    now = [5_000_000]
    queue = TableJobQueue(table, now_ms=lambda: now[0])
    queue.enqueue("acme", "plan", job("plan-1", attempt=2), delay_s=4)
    assert queue.take("acme") is None
    (waiting,) = queue.queued("acme")
    assert (waiting.attempt, waiting.delay_s, waiting.available_at_ms) == (2, 4, 5_004_000)
    now[0] += 4_000
    got = queue.take("acme")
    assert got is not None and (got.job_id, got.attempt) == ("plan-1", 2)
    with pytest.raises(ValueError):
        queue.enqueue("acme", "bogus", job("plan-2"))


def test_concurrent_takers_never_share_a_job(table: Table) -> None:
    queue = TableJobQueue(table)
    for n in range(30):
        queue.enqueue("acme", "plan", job(f"plan-{n}"))
    taken: list[list[str]] = [[], [], []]

    def taker(mine: list[str]) -> None:
        while (got := queue.take("acme")) is not None:
            mine.append(got.job_id)

    threads = [threading.Thread(target=taker, args=(mine,)) for mine in taken]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    every = [j for mine in taken for j in mine]
    assert sorted(every) == sorted(f"plan-{n}" for n in range(30))


def test_the_runner_runs_the_job_it_is_handed_then_idles_out(tmp_path: Path) -> None:
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": ""})})
    spec = make_spec("plan")
    fake.specs[spec.job_id] = spec
    fake.queued.append(spec.job_id)
    api, transfers = fake.clients()
    config = runner_config(tmp_path, fake_terraform(tmp_path / "bin"), idle_exit_s=0.3, wait_s=0)
    runner = Runner(config, api, JobExecutor(config, api, transfers, echo_to=io.StringIO()))
    assert runner.loop(once=True) == 0
    assert fake.finished[spec.job_id].status == "finished"
    assert runner.loop() == 0  # nothing left: exits after the idle time


def test_short_polls_pause_between_empty_answers(tmp_path: Path) -> None:
    fake = FakeApi()
    api, transfers = fake.clients()
    config = runner_config(
        tmp_path, fake_terraform(tmp_path / "bin"), wait_s=0, poll_interval_s=2, idle_exit_s=2, brisk_window_s=0
    )
    ticks = iter(range(100))
    pauses: list[float] = []
    runner = Runner(config, api, JobExecutor(config, api, transfers), clock=lambda: next(ticks), sleep=pauses.append)
    assert runner.loop() == 0
    assert pauses == [2]  # asked, paused, asked again, idle long enough: exit


def _pauses_around_one_plan(tmp_path: Path, finish_answer: dict[str, Any] | None) -> tuple[FakeApi, list[float]]:
    """A short-polling runner (2 s, brisk 0.5 s for 10 s, idle exit 20 s) handed one plan 5 s after its start, the
    plan's finish answered with `finish_answer`: the pauses between its empty polls."""
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": ""})})
    api, transfers = fake.clients()
    now = [0.0]
    pauses: list[float] = []

    def sleep(seconds: float) -> None:
        pauses.append(seconds)
        now[0] += seconds

    spec = make_spec("plan")
    fake.specs[spec.job_id] = spec
    if finish_answer is not None:
        fake.finish_answers[spec.job_id] = finish_answer
        fake.held_keep.add(spec.run_id)
    ask = api.next

    def next_job(wait_s: float, served: int = 0) -> Any:
        if now[0] >= 5 and spec.job_id not in fake.finished and spec.job_id not in fake.queued:
            fake.queued.append(spec.job_id)  # a job comes 5 s after the start
        return ask(wait_s, served)

    api.next = next_job  # type: ignore[method-assign]
    config = runner_config(
        tmp_path, fake_terraform(tmp_path / "bin"), wait_s=0, poll_interval_s=2, idle_exit_s=20, brisk_poll_s=0.5
    )
    runner = Runner(
        config, api, JobExecutor(config, api, transfers, echo_to=io.StringIO()), clock=lambda: now[0], sleep=sleep
    )
    assert runner.loop() == 0
    assert fake.finished[spec.job_id].status == "finished"
    return fake, pauses


def test_short_polls_are_brisk_after_the_start_and_while_a_held_plan_waits_for_its_apply(tmp_path: Path) -> None:
    """A runner is started for a job, and a plan it holds for the apply is usually confirmed within seconds (the
    CLI's `terraform apply`): for `brisk_window_s` after the start and after such a plan the pause is
    `brisk_poll_s`, then `poll_interval_s`."""
    fake, pauses = _pauses_around_one_plan(tmp_path, {"run_status": "planned"})
    assert fake.finished["plan-abc"].keep_for_apply
    # 10 brisk pauses until the job at 5 s; after it, 20 brisk pauses (10 s), then 2 s pauses until idle for 20 s
    assert pauses == [0.5] * 10 + [0.5] * 20 + [2] * 5


def test_after_a_runs_last_job_short_polls_are_not_brisk(tmp_path: Path) -> None:
    """After a job that leaves nothing to follow on this runner (here a plan whose run will not apply), each poll is
    an API request for nothing expected soon: the runner asks every `poll_interval_s` until it idles out."""
    fake, pauses = _pauses_around_one_plan(tmp_path, None)
    assert fake.finished["plan-abc"].keep_for_apply  # held, then dropped: the API's answer names no applying run
    assert pauses == [0.5] * 10 + [2] * 10


def test_an_idle_runner_waits_in_back_to_back_long_polls_then_exits(tmp_path: Path) -> None:
    """Idle, the runner only sits in the API's long-poll (the server wakes it for a job): no pause, no busy loop
    between two asks, and the last wait ends when the idle time does."""
    fake = FakeApi()
    api, transfers = fake.clients()
    now = [0.0]
    asked: list[float] = []
    ask = api.next

    def next_job(wait_s: float, served: int = 0) -> Any:
        asked.append(wait_s)
        now[0] += wait_s  # the API answers 204 when the wait is over
        return ask(wait_s, served)

    api.next = next_job  # type: ignore[method-assign]
    config = runner_config(tmp_path, fake_terraform(tmp_path / "bin"), wait_s=20, idle_exit_s=50)
    pauses: list[float] = []
    runner = Runner(config, api, JobExecutor(config, api, transfers), clock=lambda: now[0], sleep=pauses.append)
    assert runner.loop() == 0
    assert asked == [20, 20, 10] and pauses == []


def test_a_runner_that_neither_long_polls_nor_paces_itself_still_pauses(tmp_path: Path) -> None:
    fake = FakeApi()
    api, transfers = fake.clients()
    config = runner_config(
        tmp_path, fake_terraform(tmp_path / "bin"), wait_s=0, poll_interval_s=0, idle_exit_s=3, brisk_window_s=0
    )
    ticks = iter(range(100))
    pauses: list[float] = []
    runner = Runner(config, api, JobExecutor(config, api, transfers), clock=lambda: next(ticks), sleep=pauses.append)
    assert runner.loop() == 0
    assert pauses == [1.0, 1.0]  # asked three times, paused between


def test_sigterm_ends_an_idle_wait_at_once_but_lets_a_job_finish(tmp_path: Path) -> None:
    from terrace.runner.main import StopIdle

    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": ""})})
    api, transfers = fake.clients()
    config = runner_config(tmp_path, fake_terraform(tmp_path / "bin"), wait_s=20)
    runner = Runner(config, api, JobExecutor(config, api, transfers, echo_to=io.StringIO()))
    ask = api.next

    def signalled_while_waiting(wait_s: float, served: int = 0) -> Any:
        runner.request_stop()  # what the SIGTERM handler does, arriving during the long-poll
        return ask(wait_s, served)

    api.next = signalled_while_waiting  # type: ignore[method-assign]
    with pytest.raises(StopIdle):
        runner.loop()
    spec = make_spec("plan")
    fake.specs[spec.job_id] = spec
    fake.queued.append(spec.job_id)
    busy = Runner(config, api, JobExecutor(config, api, transfers, echo_to=io.StringIO()))
    busy.handle = lambda claimed: (busy.request_stop(), Runner.handle(busy, claimed))[1]  # type: ignore[method-assign]
    api.next = ask  # type: ignore[method-assign]
    assert busy.loop() == 0  # signalled during its job: the job ends and is reported, then the runner exits
    assert fake.finished[spec.job_id].status == "finished"


def test_the_runner_asks_for_its_next_job_while_its_last_report_is_in_flight(tmp_path: Path) -> None:
    """The finish call runs on its own thread: the next job is claimed before the last one's report returns, and
    every report is sent before the loop returns. (A plan whose folder the runner holds for its apply reports at
    once instead, to follow the hand-off in the answer: tests/unit/test_runner_plan_cache.py; these are
    speculative plans, never applied.)"""
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": ""})})
    for job_id in ("plan-one", "plan-two"):
        fake.specs[job_id] = make_spec("plan", job_id=job_id, operation=Operation(speculative=True))
        fake.queued.append(job_id)
    api, transfers = fake.clients()
    asked_again = threading.Event()
    asks: list[float] = []
    ask, finish = api.next, api.finish

    def next_job(wait_s: float, served: int = 0) -> Any:
        asks.append(wait_s)
        if len(asks) == 2:
            asked_again.set()
        return ask(wait_s, served)

    def slow_finish(request: Any, job_id: str) -> None:
        if job_id == "plan-one":
            assert asked_again.wait(60), "the runner waited for the report before asking for its next job"
        finish(request, job_id)

    api.next, api.finish = next_job, slow_finish  # type: ignore[method-assign]
    config = runner_config(tmp_path, fake_terraform(tmp_path / "bin"), idle_exit_s=0.01, wait_s=0)
    assert Runner(config, api, JobExecutor(config, api, transfers, echo_to=io.StringIO())).loop() == 0
    assert set(fake.finished) == {"plan-one", "plan-two"}


def test_a_refused_runner_token_stops_the_runner(tmp_path: Path) -> None:
    fake = FakeApi()
    api, transfers = fake.clients()
    api._token = "wrong-token"
    config = runner_config(tmp_path, fake_terraform(tmp_path / "bin"), idle_exit_s=5, wait_s=0)
    assert Runner(config, api, JobExecutor(config, api, transfers)).loop() == 3


def test_a_runner_past_its_retire_time_takes_no_job(tmp_path: Path) -> None:
    fake = FakeApi()
    fake.specs["plan-abc"] = make_spec("plan")
    fake.queued.append("plan-abc")
    api, transfers = fake.clients()
    config = runner_config(tmp_path, fake_terraform(tmp_path / "bin"), retire_at=100.0, wait_s=0)
    assert Runner(config, api, JobExecutor(config, api, transfers), wall_clock=lambda: 101.0).loop() == 0
    assert fake.queued == ["plan-abc"]
