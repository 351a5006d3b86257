"""`terrace agent`'s settings (tfc-agent's variables, overridden by flags) and its SIGTERM rule: a plan in flight is
killed and handed back (released, not reported), an apply in flight is left to finish and reported."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from runner_fakes import make_spec
from terrace.domain.jobs import FinishRequest
from terrace.runner.agent import AgentRunner, options_from, runner_config
from terrace.runner.config import ConfigError, RunnerConfig
from terrace.runner.process import CancelControl
from typer.testing import CliRunner


def test_tfc_agent_variables_and_flags() -> None:
    env = {"TFC_AGENT_TOKEN": "t0k", "TFC_ADDRESS": "https://tf.example.com/", "TFC_AGENT_NAME": "vm-1",
           "TFC_AGENT_SINGLE": "true", "TFC_AGENT_LOG_LEVEL": "debug", "TFC_AGENT_AUTO_UPDATE": "minor"}  # fmt: skip
    options = options_from(env)
    assert (options.token, options.address, options.name, options.single, options.log_level) == (
        "t0k", "https://tf.example.com", "vm-1", True, "debug")  # fmt: skip
    flagged = options_from(env, token="other", name="vm-2", log_level="warn")
    assert (flagged.token, flagged.name, flagged.log_level, flagged.address) == (
        "other", "vm-2", "warn", "https://tf.example.com")  # fmt: skip
    config = runner_config(options, {"TERRACE_TOOLS_DIR": "/opt/tools", "HOME": "/root"})
    assert (config.api_url, config.runner_token, config.wait_s, config.idle_exit_s) == (
        "https://tf.example.com", "t0k", 20.0, 0.0)  # fmt: skip
    assert config.tools_dir == Path("/opt/tools") and config.work_dir == Path("/tmp/terrace-agent")
    with pytest.raises(ConfigError, match="TFC_AGENT_TOKEN"):
        options_from({"TFC_ADDRESS": "https://x"})
    with pytest.raises(ConfigError, match="TFC_AGENT_LOG_LEVEL"):
        options_from({**env, "TFC_AGENT_LOG_LEVEL": "loud"})
    with pytest.raises(ConfigError, match="TFC_ADDRESS"):
        options_from({**env, "TFC_ADDRESS": "ftp://x"})


@pytest.mark.parametrize(
    "address", ["http://tf.example.com", "http://10.0.0.5:8080", "http://169.254.169.254", "http://[::ffff:1.2.3.4]"]
)
def test_plain_http_is_refused_beyond_loopback_whatever_the_flag(address: str) -> None:
    env = {"TFC_AGENT_TOKEN": "t0k", "TFC_ADDRESS": address}
    for flags in ({}, {"allow_insecure_loopback": True}):
        with pytest.raises(ConfigError, match="token in clear; use https$"):
            options_from(env, **flags)


@pytest.mark.parametrize("address", ["http://127.0.0.1:8080", "http://localhost:8080/", "http://[::1]:9"])
def test_plain_http_to_loopback_needs_the_explicit_flag(address: str) -> None:
    env = {"TFC_AGENT_TOKEN": "t0k", "TFC_ADDRESS": address}
    with pytest.raises(ConfigError, match="--allow-insecure-loopback"):
        options_from(env)
    assert options_from(env, allow_insecure_loopback=True).address == address.rstrip("/")
    assert options_from({**env, "TERRACE_AGENT_ALLOW_INSECURE_LOOPBACK": "1"}).address == address.rstrip("/")


def test_the_cli_refuses_plain_http_with_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from terrace.cli import app

    monkeypatch.setenv("TFC_AGENT_TOKEN", "t0k")
    monkeypatch.delenv("TERRACE_AGENT_ALLOW_INSECURE_LOOPBACK", raising=False)
    result = CliRunner().invoke(app, ["agent", "--address", "http://tf.example.com"])
    assert result.exit_code == 2 and "token in clear" in result.output


def test_the_cli_refuses_missing_settings_with_exit_2(monkeypatch: pytest.MonkeyPatch) -> None:
    from terrace.cli import app

    monkeypatch.delenv("TFC_AGENT_TOKEN", raising=False)
    result = CliRunner().invoke(app, ["agent", "--address", "https://x"])
    assert result.exit_code == 2 and "TFC_AGENT_TOKEN is required" in result.output


class _Api:
    runner_id = "agent-1"

    def __init__(self) -> None:
        self.released: list[str] = []
        self.finished: list[tuple[str, str]] = []

    def release(self, job_id: str) -> None:
        self.released.append(job_id)

    def finish(self, report: FinishRequest, job_id: str) -> None:
        self.finished.append((job_id, report.status))


class _Executor:
    """Runs a job until its cancel control is asked to stop (or at once for an apply), as `JobExecutor.execute`."""

    def __init__(self, runner: list[AgentRunner]) -> None:
        self.current: CancelControl | None = None
        self.runner = runner
        self.cache = type("Cache", (), {"holds": staticmethod(lambda run_id: False)})()

    def execute(self, spec: Any, keep_for_apply: bool = True) -> FinishRequest:
        self.current = control = CancelControl()
        self.runner[0].request_stop()  # SIGTERM arrives mid-job
        deadline = time.monotonic() + 5
        while spec.phase == "plan" and not control.force_requested and time.monotonic() < deadline:
            time.sleep(0.01)
        self.current = None
        return FinishRequest(runner_id="agent-1", status="canceled" if control.requested else "finished")


@pytest.mark.parametrize(("phase", "released", "finished"), [("plan", 1, 0), ("apply", 0, 1)])
def test_sigterm_hands_a_plan_back_and_lets_an_apply_finish(phase: str, released: int, finished: int) -> None:
    holder: list[AgentRunner] = []
    api = _Api()
    config = RunnerConfig(api_url="https://x", runner_token="t")
    runner = AgentRunner(config=config, api=api, executor=_Executor(holder))  # type: ignore[arg-type]
    holder.append(runner)
    runner.handle(make_spec(phase))
    runner.wait_for_reports()
    assert (len(api.released), len(api.finished)) == (released, finished)
    assert runner.stopping
    if finished:
        assert api.finished[0][1] == "finished"
