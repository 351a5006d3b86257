"""The runner's settings (pydantic-settings, `runner/config.py`) and command line (typer, `runner/main.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from terrace.runner import main as runner_main
from terrace.runner.config import ConfigError, RunnerConfig

BASE = {"TERRACE_API_URL": "https://api.example/", "TERRACE_RUNNER_TOKEN": "sekret"}


def test_keyword_construction_reads_no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERRACE_RUNNER_WAIT_S", "1")
    monkeypatch.setenv("TERRACE_WORK_DIR", "/elsewhere")
    monkeypatch.setenv("TERRACE_RUNNER_ID", "from-env")
    config = RunnerConfig(api_url="https://x", runner_token="t")
    assert (config.wait_s, config.work_dir, config.runner_id) == (5.0, Path("/tmp/terrace-runner"), "")
    assert (config.default_tool, config.brisk_poll_s, config.max_config_entries) == ("terraform", 0.5, 100_000)
    with pytest.raises(ValueError, match="wiat_s"):
        RunnerConfig(api_url="https://x", runner_token="t", wiat_s=1)  # a typo is no silent default


def test_from_env_reads_each_variable_and_the_defaults_the_runner_always_had() -> None:
    config = RunnerConfig.from_env(
        {
            **BASE,
            "TERRACE_TF_BINARY": "/opt/bin/tofu",
            "TERRACE_TOOLS_DIR": "/opt/tools",
            "TERRACE_OPERATOR_CLI_CONFIG": "/etc/cli.tfrc",
            "SSL_CERT_FILE": "/ca.pem",
            "TERRACE_RUNNER_POLL_INTERVAL_S": "2",
            "TERRACE_RUNNER_BRISK_WINDOW_S": "",  # empty is unset
            "TERRACE_RUNNER_MAX_CONFIG_BYTES": "1000",
            "brisk_poll_s": "9",  # a field without a variable reads none
            "max_config_entries": "1",
        }
    )
    assert (config.api_url, config.runner_token, config.tf_binary) == ("https://api.example", "sekret", "/opt/bin/tofu")
    assert config.default_tool == "opentofu"  # the default binary is tofu
    assert (config.tools_dir, config.operator_cli_config, config.ssl_cert_file) == (
        Path("/opt/tools"),
        Path("/etc/cli.tfrc"),
        "/ca.pem",
    )
    assert (config.poll_interval_s, config.brisk_window_s, config.max_config_bytes) == (2.0, 10.0, 1000)
    assert (config.brisk_poll_s, config.max_config_entries) == (0.5, 100_000)
    assert config.runner_id  # <hostname>-<pid>
    chosen = RunnerConfig.from_env({**BASE, "TERRACE_DEFAULT_TOOL": "terraform", "TERRACE_TF_BINARY": "tofu"})
    assert chosen.default_tool == "terraform"


@pytest.mark.parametrize(
    ("name", "raw", "clamped"),
    [
        ("TERRACE_RUNNER_WAIT_S", "99", 20.0),
        ("TERRACE_RUNNER_WAIT_S", "-1", 0.0),
        ("TERRACE_RUNNER_POLL_INTERVAL_S", "600", 60.0),
        ("TERRACE_RUNNER_BRISK_WINDOW_S", "9999", 300.0),
        ("TERRACE_RUNNER_IDLE_EXIT_S", "-5", 0.0),
        ("TERRACE_RUNNER_RETIRE_AT", "-5", 0.0),
    ],
)
def test_timings_are_clamped_not_refused(name: str, raw: str, clamped: float) -> None:
    field = {
        "TERRACE_RUNNER_WAIT_S": "wait_s",
        "TERRACE_RUNNER_POLL_INTERVAL_S": "poll_interval_s",
        "TERRACE_RUNNER_BRISK_WINDOW_S": "brisk_window_s",
        "TERRACE_RUNNER_IDLE_EXIT_S": "idle_exit_s",
        "TERRACE_RUNNER_RETIRE_AT": "retire_at",
    }[name]
    assert getattr(RunnerConfig.from_env({**BASE, name: raw}), field) == clamped


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {},
            "invalid runner settings: TERRACE_API_URL is required (e.g. https://localhost:8443); "
            "TERRACE_RUNNER_ENROLLMENT_CODE or TERRACE_RUNNER_TOKEN is required (the scaler gives a code)",
        ),
        (
            {**BASE, "TERRACE_RUNNER_WAIT_S": "soon"},
            "invalid runner settings: TERRACE_RUNNER_WAIT_S: Input should be a valid number, unable to parse string "
            "as a number (got 'soon')",
        ),
        (
            {**BASE, "TERRACE_TF_BINARIES": "1.0.3=/a,junk"},
            "invalid runner settings: TERRACE_TF_BINARIES: expected version=path, got 'junk'",
        ),
        (
            {**BASE, "TERRACE_RUNNER_MAX_CONFIG_EXPANDED_BYTES": "lots"},
            "invalid runner settings: TERRACE_RUNNER_MAX_CONFIG_EXPANDED_BYTES: Input should be a valid integer, "
            "unable to parse string as an integer (got 'lots')",
        ),
    ],
)
def test_a_bad_environment_is_one_line_naming_each_bad_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        RunnerConfig.from_env(env)
    assert str(caught.value) == message and "\n" not in message


def test_the_command_line_keeps_its_flags_and_exit_codes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("TERRACE_API_URL", "TERRACE_RUNNER_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    assert runner_main.main(["--help"]) == 0 and "--once" in capsys.readouterr().out
    assert runner_main.main(["-h"]) == 0
    assert runner_main.main(["--bogus"]) == 2  # a usage error, as argparse's
    assert runner_main.main(["extra"]) == 2
    assert runner_main.main([]) == 2  # the environment names no API: logged, exit 2
    assert "TERRACE_API_URL is required" in capsys.readouterr().out

    served: list[bool] = []
    monkeypatch.setattr(runner_main, "serve", lambda once=False: served.append(once) or 3)
    assert runner_main.main(["--once"]) == 3 and runner_main.main([]) == 3
    assert served == [True, False]
