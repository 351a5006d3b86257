"""A plan's folder held for the same run's apply: bounds of the cache, reuse without init, fallback to a fresh
folder when the stored plan differs, isolation from other job uids, and nothing left when the runner exits."""

from __future__ import annotations

import io
import json
import os
import subprocess
from pathlib import Path

import pytest
from runner_fakes import S3, FakeApi, fake_terraform, make_spec, runner_config, tarball
from terrace.domain.jobs import FinishResponse, Operation
from terrace.runner import sandbox
from terrace.runner.execution import JobExecutor
from terrace.runner.job_folder import JobFolder
from terrace.runner.main import Runner
from terrace.runner.plan_cache import PlanCache
from terrace.runner.rundir import OVERRIDE_FILE


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _folder(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / name
    (folder / "config").mkdir(parents=True)
    (folder / "plan.tfplan").write_text(name)
    return folder


def _hold(cache: PlanCache, tmp_path: Path, run_id: str) -> Path:
    folder = _folder(tmp_path, run_id)
    cache.hold(run_id, _job_folder(folder), folder / "config", folder / "plan.tfplan")
    return folder


def _job_folder(path: Path) -> JobFolder:
    return JobFolder(path, os.geteuid(), os.getegid())


def test_the_cache_keeps_at_most_max_entries_dropping_the_oldest(tmp_path: Path) -> None:
    cache = PlanCache(max_entries=2, max_age_s=60, clock=Clock())
    first, second, third = (_hold(cache, tmp_path, f"run-{n}") for n in range(3))
    assert cache.run_ids() == ["run-1", "run-2"]
    assert not first.exists() and second.exists() and third.exists()


def test_the_cache_drops_folders_older_than_max_age(tmp_path: Path) -> None:
    clock = Clock()
    cache = PlanCache(max_entries=4, max_age_s=60, clock=clock)
    old = _hold(cache, tmp_path, "run-old")
    clock.now += 30
    young = _hold(cache, tmp_path, "run-young")
    clock.now += 31  # run-old is 61 s old, run-young 31 s
    assert cache.take("run-old") is None and not old.exists()
    held = cache.take("run-young")
    assert held is not None and held.folder.path == young and young.exists()  # taken: now the caller's
    assert len(cache) == 0


def test_keep_only_hold_again_and_clear(tmp_path: Path) -> None:
    cache = PlanCache(max_entries=4, max_age_s=60, clock=Clock())
    a, b = _hold(cache, tmp_path, "run-a"), _hold(cache, tmp_path, "run-b")
    cache.keep_only({"run-b", "run-unknown"})
    assert cache.run_ids() == ["run-b"] and not a.exists() and b.exists()
    b2 = tmp_path / "run-b2"
    b2.mkdir()
    cache.hold("run-b", _job_folder(b2), b2, b2 / "plan.tfplan")  # a second plan of the same run replaces the first
    assert not b.exists() and cache.run_ids() == ["run-b"]
    cache.clear()
    assert len(cache) == 0 and not b2.exists()


def test_holds_answers_for_the_runs_held_until_taken_or_dropped(tmp_path: Path) -> None:
    cache = PlanCache(max_entries=4, max_age_s=60, clock=Clock())
    assert not cache.holds("run-a")
    _hold(cache, tmp_path, "run-a")
    _hold(cache, tmp_path, "run-b")
    assert cache.holds("run-a") and cache.holds("run-b") and not cache.holds("run-c")
    assert cache.take("run-a") is not None
    assert not cache.holds("run-a") and cache.holds("run-b")
    cache.drop("run-b")
    assert not cache.holds("run-b")


def test_a_cache_of_no_entries_holds_nothing(tmp_path: Path) -> None:
    cache = PlanCache(max_entries=0, max_age_s=60, clock=Clock())
    folder = _hold(cache, tmp_path, "run-x")
    assert len(cache) == 0 and not folder.exists()


# the executor ----------------------------------------------------------------------------------


def _executor(tmp_path: Path, fake: FakeApi, **kwargs: object) -> tuple[JobExecutor, Path]:
    script = fake_terraform(tmp_path / "bin")
    api, transfers = fake.clients()
    return JobExecutor(runner_config(tmp_path, script), api, transfers, echo_to=io.StringIO(), **kwargs), script  # type: ignore[arg-type]


def _calls(rec: Path) -> list[str]:
    """The terraform commands the job ran (the version probe aside)."""
    commands = [(rec / f"call-{i}.args").read_text().split("\n")[0] for i in range(len(list(rec.glob("call-*.args"))))]
    return [c for c in commands if c != "version"]


def _plan_then_apply(tmp_path: Path, fake: FakeApi, executor: JobExecutor) -> tuple[str, str]:
    plan, apply = make_spec("plan"), make_spec("apply")
    fake.specs = {plan.job_id: plan, apply.job_id: apply}
    report = executor.execute(plan)
    assert report.status == "finished" and report.keep_for_apply, report.error_message
    executor.settled(plan, FinishResponse(run_status="applying", next_job=apply))
    assert executor.cache.run_ids() == ["run-abc"]
    applied = executor.execute(apply)
    assert applied.status == "finished", applied.error_message
    assert not applied.keep_for_apply and len(executor.cache) == 0
    return bytes(fake.logs["apply-abc"]).decode(), (tmp_path / "bin" / "applied-plan").read_text()


def test_the_apply_works_in_the_plans_folder_without_a_second_init(tmp_path: Path) -> None:
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": ""})})
    executor, _ = _executor(tmp_path, fake)
    apply_log, applied = _plan_then_apply(tmp_path, fake, executor)
    assert _calls(tmp_path / "bin") == ["init", "plan", "show", "apply"]
    assert "Reusing the plan's working directory" in apply_log and "Initializing" not in apply_log
    assert apply_log.splitlines()[0].startswith("Terraform v")  # the banner the CLI skips is still there
    assert applied == "binary-plan\n"
    assert list((tmp_path / "work").iterdir()) == []


def test_a_stored_plan_unlike_the_folders_starts_afresh(tmp_path: Path) -> None:
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": ""})})
    executor, _ = _executor(tmp_path, fake)
    plan = make_spec("plan")
    fake.specs[plan.job_id] = plan
    executor.execute(plan)
    fake.blobs["plan.tfplan"] = b"the plan the server holds\n"  # the server's copy is the truth
    applied = executor.execute(make_spec("apply"))
    assert applied.status == "finished", applied.error_message
    apply_log = bytes(fake.logs["apply-abc"]).decode()
    assert "does not hold the stored plan: starting afresh" in apply_log
    assert _calls(tmp_path / "bin") == ["init", "plan", "show", "init", "apply"]
    assert (tmp_path / "bin" / "applied-plan").read_text() == "the plan the server holds\n"
    assert list((tmp_path / "work").iterdir()) == []


def test_another_runner_applies_from_a_fresh_folder(tmp_path: Path) -> None:
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": ""})})
    planner, _ = _executor(tmp_path, fake)
    planner.execute(make_spec("plan"))
    other, _ = _executor(tmp_path / "other", fake)
    applied = other.execute(make_spec("apply"))
    assert applied.status == "finished", applied.error_message
    assert "Initializing plugins and modules..." in bytes(fake.logs["apply-abc"]).decode()
    assert (tmp_path / "other" / "bin" / "applied-plan").read_text() == "binary-plan\n"


@pytest.mark.parametrize(
    ("answer", "kept"),
    [
        (None, False),  # the finish report failed: the plan is the reaper's now
        (FinishResponse(run_status="planned_and_finished"), False),
        (FinishResponse(run_status="discarded"), False),
        (FinishResponse(run_status="cost_estimated"), True),  # awaits confirmation
        (FinishResponse(run_status="apply_queued"), True),
    ],
)
def test_the_finish_answer_decides_whether_the_folder_stays(
    tmp_path: Path, answer: FinishResponse | None, kept: bool
) -> None:
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": ""})})
    executor, _ = _executor(tmp_path, fake)
    spec = make_spec("plan")
    executor.execute(spec)
    executor.settled(spec, answer)
    assert (executor.cache.run_ids() == ["run-abc"]) is kept
    assert bool(list((tmp_path / "work").iterdir())) is kept


def test_speculative_and_unchanged_plans_are_not_held(tmp_path: Path) -> None:
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": ""})})
    executor, _ = _executor(tmp_path, fake)
    speculative = make_spec("plan", operation=Operation(speculative=True))
    assert not executor.execute(speculative).keep_for_apply
    assert not executor.execute(make_spec("plan"), keep_for_apply=False).keep_for_apply  # a retiring runner
    assert list((tmp_path / "work").iterdir()) == [] and len(executor.cache) == 0


def test_links_a_plan_job_left_are_replaced_not_written_through(tmp_path: Path) -> None:
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": ""})})
    executor, _ = _executor(tmp_path, fake)
    executor.execute(make_spec("plan"))
    held = executor.cache.take("run-abc")
    assert held is not None
    victim = tmp_path / "victim"
    victim.write_text("untouched")
    (held.cwd / OVERRIDE_FILE).unlink()
    (held.cwd / OVERRIDE_FILE).symlink_to(victim)
    (held.folder.path / "plan.stored").symlink_to(victim)
    executor.cache.hold("run-abc", held.folder, held.cwd, held.plan_file)
    applied = executor.execute(make_spec("apply"))
    assert applied.status == "finished", applied.error_message
    assert victim.read_text() == "untouched"


@pytest.mark.skipif(os.geteuid() != 0, reason="per-job uids need the runner to run as root")
def test_a_held_folder_is_the_runners_not_readable_by_job_uids_and_gone_when_the_runner_exits(
    tmp_path: Path,
) -> None:
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": "secret config"})})
    executor, _ = _executor(tmp_path, fake)
    executor.execute(make_spec("plan"))
    (run_id,) = executor.cache.run_ids()
    held = executor.cache.take(run_id)
    assert held is not None
    executor.cache.hold(run_id, held.folder, held.cwd, held.plan_file)
    info = held.folder.path.stat()
    assert (info.st_uid, info.st_mode & 0o777) == (os.geteuid(), 0o700)
    other = sandbox.allocate()  # the next job's uid (maybe the plan's own, now free)
    assert other is not None
    try:
        for target in (held.folder.path, held.plan_file, held.cwd / "main.tf"):
            read = subprocess.run(
                sandbox.wrap(["cat" if target.is_file() else "ls", str(target)], other),
                capture_output=True,
                text=True,
                check=False,
            )
            assert read.returncode != 0 and "secret config" not in read.stdout and "binary-plan" not in read.stdout
    finally:
        sandbox.kill_uid(other.uid)
        other.release()
    executor.close()  # what the runner does when it exits
    assert not held.folder.path.exists() and list((tmp_path / "work").iterdir()) == []


def test_the_runner_applies_what_the_finish_answer_hands_it(tmp_path: Path) -> None:
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": ""})})
    plan, apply = make_spec("plan"), make_spec("apply")
    fake.specs = {plan.job_id: plan, apply.job_id: apply}
    fake.queued.append(plan.job_id)
    fake.finish_answers[plan.job_id] = {"run_status": "applying", "next_job": json.loads(apply.model_dump_json())}
    executor, _ = _executor(tmp_path, fake)
    assert Runner(executor.config, executor.api, executor).loop(once=True) == 0
    assert (fake.finished[plan.job_id].status, fake.finished[apply.job_id].status) == ("finished", "finished")
    assert fake.finished[plan.job_id].keep_for_apply
    assert _calls(tmp_path / "bin") == ["init", "plan", "show", "apply"]
    assert list((tmp_path / "work").iterdir()) == []


def test_an_idle_runner_drops_the_folders_the_api_says_it_will_not_apply(tmp_path: Path) -> None:
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": ""})})
    for run in ("run-a", "run-b"):
        urls = {"plan_upload_url": f"{S3}/{run}/plan.tfplan", "plan_json_upload_url": f"{S3}/{run}/plan.json"}
        spec = make_spec("plan", job_id=f"plan-{run[4:]}", run_id=run, **urls)  # each run's plan has its own keys
        fake.specs[spec.job_id] = spec
        fake.queued.append(spec.job_id)
        fake.finish_answers[spec.job_id] = {"run_status": "cost_estimated", "next_job": None}  # awaits a human
    fake.held_keep = {"run-b"}  # run-a was discarded meanwhile
    executor, script = _executor(tmp_path, fake)
    config = runner_config(tmp_path, script, idle_exit_s=0.5, wait_s=0)
    ticks = iter(range(1000))
    runner = Runner(config, executor.api, executor, clock=lambda: next(ticks) * 0.1)
    assert runner.loop() == 0  # two plans, then idle: asks which folders to keep, then exits
    assert fake.held_asked and fake.held_asked[0] == ["run-a", "run-b"]
    assert executor.cache.run_ids() == ["run-b"]
    executor.close()
    assert list((tmp_path / "work").iterdir()) == []
