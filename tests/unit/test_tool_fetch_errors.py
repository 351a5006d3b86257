"""A release mirror the runner cannot use errors the run with a reason the CLI prints: the plan's log says which
version could not be fetched, from which mirror, why in words (connection refused, the mirror has no such release)
and which setting names that mirror; no traceback, nothing cached. A whole job against the fake runner API; the
mirror is one the fake transport refuses to connect to or answers 404."""

from __future__ import annotations

import io
import logging
import socket
from pathlib import Path

import httpx
import pytest
from runner_fakes import FakeApi, fake_terraform, make_spec, runner_config, tarball
from terrace.domain.jobs import FinishRequest
from terrace.runner.client import Transfers
from terrace.runner.execution import JobExecutor
from terrace.runner.release_check import ReleaseRefused
from terrace.runner.tool_fetch import ToolFetcher

MIRROR = "https://mirror.test/terraform"


def _job(tmp_path: Path, mirror: httpx.MockTransport | None, **config: object) -> tuple[FinishRequest, str]:
    """A plan pinned to terraform 1.11.4 (a version the runner does not hold), its report and its log."""
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": ""})})
    spec = make_spec("plan", tool="terraform", terraform_version="1.11.4")
    fake.specs[spec.job_id] = spec
    api, _ = fake.clients()

    def route(request: httpx.Request) -> httpx.Response:
        if request.url.host in ("mirror.test", "releases.hashicorp.com"):  # never the real one: the fake answers
            if mirror is None:
                raise httpx.ConnectError("[Errno 111] Connection refused", request=request)
            return mirror.handle_request(request)
        return fake.handler(request)

    transfers = Transfers(transport=httpx.MockTransport(route), retry_delays=(0.01,), sleep=lambda s: None)
    script = fake_terraform(tmp_path / "bin")
    executor = JobExecutor(runner_config(tmp_path, script, **config), api, transfers, echo_to=io.StringIO())
    report = executor.execute(spec)
    return report, bytes(fake.logs[spec.job_id]).decode()


def _first_line(report: FinishRequest) -> str:
    return (report.error_message or "").splitlines()[0]  # the log's tail follows


def _fetched(tmp_path: Path) -> list[Path]:
    tools = tmp_path / "work" / "tools"
    return [p for p in tools.rglob("*") if not p.name.endswith(".lock")] if tools.exists() else []


def test_a_mirror_that_refuses_the_connection_errors_the_run_in_words(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="terrace.runner"):
        report, log = _job(tmp_path, None, tool_mirror_terraform=MIRROR)
    reason = (
        f"Terraform 1.11.4 could not be fetched from {MIRROR}: connection refused "
        "(the deployment's TERRACE_TOOL_MIRROR_TERRAFORM); nothing was cached"
    )
    assert report.status == "errored" and _first_line(report) == reason
    assert f"Error: {reason}" in log, log
    assert "the runner failed" not in log and "ConnectError" not in log and "Traceback" not in log
    assert not [r for r in caplog.records if r.exc_info]  # no traceback in the runner's own log either
    assert _fetched(tmp_path) == []


def test_a_mirror_without_the_release_errors_the_run_naming_the_version(tmp_path: Path) -> None:
    report, log = _job(tmp_path, httpx.MockTransport(lambda r: httpx.Response(404)), tool_mirror_terraform=MIRROR)
    reason = (
        f"Terraform 1.11.4 could not be fetched from {MIRROR}: the mirror has no 1.11.4: no "
        "terraform_1.11.4_SHA256SUMS (the deployment's TERRACE_TOOL_MIRROR_TERRAFORM); nothing was cached"
    )
    assert report.status == "errored" and _first_line(report) == reason
    assert f"Error: {reason}" in log and "Traceback" not in log, log
    assert _fetched(tmp_path) == []


def test_the_default_mirror_is_named_with_the_setting_that_replaces_it(tmp_path: Path) -> None:
    """No TERRACE_TOOL_MIRROR_TERRAFORM: the error says the vendor's site was asked, and how to name another."""
    report, _ = _job(tmp_path, httpx.MockTransport(lambda r: httpx.Response(404)))
    assert _first_line(report) == (
        "Terraform 1.11.4 could not be fetched from https://releases.hashicorp.com: the mirror has no 1.11.4: no "
        "terraform_1.11.4_SHA256SUMS (the default mirror; TERRACE_TOOL_MIRROR_TERRAFORM names another); nothing was "
        "cached"
    )


def test_a_mirror_answering_another_error_says_its_status(tmp_path: Path) -> None:
    report, _ = _job(tmp_path, httpx.MockTransport(lambda r: httpx.Response(403)), tool_mirror_terraform=MIRROR)
    assert report.error_message and "the mirror answered HTTP 403 for terraform_1.11.4_SHA256SUMS" in (
        report.error_message
    )


def test_a_mirror_that_redirects_is_followed(tmp_path: Path) -> None:
    """The vendors' sites redirect (OpenTofu's releases to the forge's object store): a redirect is followed,
    never stored as the file."""

    def redirect(request: httpx.Request) -> httpx.Response:
        if request.url.path.startswith("/moved/"):
            return httpx.Response(404)
        return httpx.Response(302, headers={"Location": f"https://mirror.test/moved{request.url.path}"})

    report, _ = _job(tmp_path, httpx.MockTransport(redirect), tool_mirror_terraform=MIRROR)
    assert report.error_message and "the mirror has no 1.11.4: no terraform_1.11.4_SHA256SUMS" in report.error_message


def test_a_stopped_mirror_is_refused_at_once_over_a_real_socket(tmp_path: Path) -> None:
    """A real connection to a port nobody listens on (the local mirror stopped)."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]  # closed again before the fetch: nothing listens there
    mirror = f"https://127.0.0.1:{port}/terraform"
    fetcher = ToolFetcher(tmp_path, Transfers(retry_delays=()), {"terraform": mirror}, keys=[], arch="amd64")
    with pytest.raises(
        ReleaseRefused, match=r"^connection refused \(the deployment's TERRACE_TOOL_MIRROR_TERRAFORM\)$"
    ) as e:
        fetcher.ensure("terraform", "1.11.4")
    assert e.value.mirror == mirror
    assert [p for p in tmp_path.rglob("*") if not p.name.endswith(".lock")] == []
