"""`terraform init` that fails on a network error reaching the API (found by tests/proof/test_network_*.py: a
connection reset during the remote backend's ping errored the plan) is run again with back-off; any other init
failure still ends the job at once."""

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


def _run(tmp_path: Path, init_body: str) -> tuple[object, list[str], str]:
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": ""})})
    spec = make_spec("plan")
    fake.specs[spec.job_id] = spec
    script = fake_terraform(tmp_path / "bin", init_body=init_body)
    api, transfers = fake.clients()
    report = JobExecutor(runner_config(tmp_path, script), api, transfers, echo_to=io.StringIO()).execute(spec)
    rec = tmp_path / "bin"
    commands = [(rec / f"call-{i}.args").read_text().split("\n")[0] for i in range(len(list(rec.glob("call-*.args"))))]
    return report, commands, bytes(fake.logs[spec.job_id]).decode()


def test_init_is_retried_after_a_connection_reset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(job_setup, "INIT_RETRY_DELAYS_S", (0.0, 0.0, 0.0))
    once = f'if [ ! -f "$rec/failed-once" ]; then touch "$rec/failed-once"; {RESET}; exit 1; fi'
    report, commands, log = _run(tmp_path, once)
    assert report.status == "finished", report.error_message  # type: ignore[attr-defined]
    assert commands == ["version", "init", "init", "plan", "show"]
    assert "init met a network error reaching the API; retrying" in log


def test_init_failing_otherwise_is_not_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(job_setup, "INIT_RETRY_DELAYS_S", (0.0, 0.0, 0.0))
    report, commands, _ = _run(tmp_path, 'echo "Error: Unsupported block type"; exit 1')
    assert report.status == "errored"  # type: ignore[attr-defined]
    assert commands == ["version", "init"]


def test_init_retries_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(job_setup, "INIT_RETRY_DELAYS_S", (0.0, 0.0))
    report, commands, _ = _run(tmp_path, f"{RESET}; exit 1")
    assert report.status == "errored"  # type: ignore[attr-defined]
    assert commands == ["version", "init", "init", "init"]
