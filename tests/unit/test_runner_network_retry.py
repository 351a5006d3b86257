"""`terraform init`, `plan` and `show -json` that fail on a network error reaching the API (found by
tests/proof/test_network_*.py: a connection reset during the remote backend's ping, or while a plan read the
state, errored the run) are run again with back-off; any other failure still ends the job at once, and an apply is
never run again."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from runner_fakes import FakeApi, fake_terraform, make_spec, runner_config, tarball
from terrace.runner import job_setup
from terrace.runner.execution import JobExecutor

RESET = (
    'echo "Error: Failed to create the Terraform Enterprise client: Get \\"https://api/api/v2/ping\\": read tcp '
    '127.0.0.1:1->127.0.0.1:2: read: connection reset by peer."'
)


ONCE = f'if [ ! -f "$rec/failed-once" ]; then touch "$rec/failed-once"; {RESET}; exit 1; fi'


def _run(tmp_path: Path, init_body: str = "", **bodies: str) -> tuple[object, list[str], str]:
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": ""})})
    spec = make_spec("plan")
    fake.specs[spec.job_id] = spec
    script = fake_terraform(tmp_path / "bin", init_body=init_body, **bodies)
    api, transfers = fake.clients()
    report = JobExecutor(runner_config(tmp_path, script), api, transfers, echo_to=io.StringIO()).execute(spec)
    rec = tmp_path / "bin"
    commands = [(rec / f"call-{i}.args").read_text().split("\n")[0] for i in range(len(list(rec.glob("call-*.args"))))]
    return report, commands, bytes(fake.logs[spec.job_id]).decode()


def test_init_is_retried_after_a_connection_reset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(job_setup, "NETWORK_RETRY_DELAYS_S", (0.0, 0.0, 0.0))
    once = f'if [ ! -f "$rec/failed-once" ]; then touch "$rec/failed-once"; {RESET}; exit 1; fi'
    report, commands, log = _run(tmp_path, once)
    assert report.status == "finished", report.error_message  # type: ignore[attr-defined]
    assert commands == ["version", "init", "init", "plan", "show"]
    assert "init met a network error reaching the API; retrying" in log


def test_init_failing_otherwise_is_not_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(job_setup, "NETWORK_RETRY_DELAYS_S", (0.0, 0.0, 0.0))
    report, commands, _ = _run(tmp_path, 'echo "Error: Unsupported block type"; exit 1')
    assert report.status == "errored"  # type: ignore[attr-defined]
    assert commands == ["version", "init"]


def test_init_retries_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(job_setup, "NETWORK_RETRY_DELAYS_S", (0.0, 0.0))
    report, commands, _ = _run(tmp_path, f"{RESET}; exit 1")
    assert report.status == "errored"  # type: ignore[attr-defined]
    assert commands == ["version", "init", "init", "init"]


def test_a_plan_that_met_a_network_error_is_run_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(job_setup, "NETWORK_RETRY_DELAYS_S", (0.0, 0.0, 0.0))
    report, commands, log = _run(tmp_path, plan_body=ONCE)
    assert report.status == "finished", report.error_message  # type: ignore[attr-defined]
    assert report.resource_additions == 2  # type: ignore[attr-defined]  # the second plan's, read by show
    assert commands == ["version", "init", "plan", "plan", "show"]
    assert "plan met a network error reaching the API; retrying" in log


def test_reading_the_plan_is_run_again_after_a_network_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(job_setup, "NETWORK_RETRY_DELAYS_S", (0.0, 0.0, 0.0))
    report, commands, log = _run(tmp_path, show_body=ONCE.replace(RESET, f"echo partial-json; {RESET} >&2"))
    assert report.status == "finished", report.error_message  # type: ignore[attr-defined]
    assert report.resource_additions == 2  # type: ignore[attr-defined]  # the second attempt's JSON alone (stderr: the log)
    assert commands == ["version", "init", "plan", "show", "show"]
    assert "reading the plan met a network error reaching the API; retrying" in log


def test_a_plan_failing_otherwise_is_not_run_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(job_setup, "NETWORK_RETRY_DELAYS_S", (0.0, 0.0, 0.0))
    report, commands, _ = _run(tmp_path, plan_body='echo "Error: Reference to undeclared resource"; exit 1')
    assert report.status == "errored"  # type: ignore[attr-defined]
    assert commands == ["version", "init", "plan"]
