"""Run files, the child's environment, command lines and binary selection."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from runner_fakes import make_spec
from terrace.domain.jobs import Operation, RunVariable
from terrace.runner import commands
from terrace.runner.config import ConfigError, RunnerConfig, parse_binaries
from terrace.runner.rundir import (
    RunSetupError,
    child_env,
    operator_cli_blocks,
    remote_backend_override,
    render_cli_config,
    render_tfvars,
)


def test_tfvars_hcl_values_raw_and_strings_quoted() -> None:
    text = render_tfvars(
        [
            RunVariable(key="name", value='say "hi" ${x}', category="terraform"),
            RunVariable(key="tags", value='{ a = "b" }', category="terraform", hcl=True),
            RunVariable(key="AWS_REGION", value="eu-west-1", category="env"),
        ]
    )
    assert text == 'name = "say \\"hi\\" $${x}"\ntags = { a = "b" }\n'


def test_bad_variable_names_are_clear_errors() -> None:
    with pytest.raises(RunSetupError, match="invalid terraform variable name"):
        render_tfvars([RunVariable(key="a b", value="", category="terraform")])
    with pytest.raises(RunSetupError, match="cannot be overridden"):
        child_env(
            path="/bin",
            home=Path("/h"),
            cli_config=Path("/c"),
            ssl_cert_file=None,
            variables=[RunVariable(key="TF_CLI_CONFIG_FILE", value="/x", category="env")],
        )


def test_backend_override_points_at_terrace() -> None:
    text = remote_backend_override(make_spec(hostname="localhost:8443", organization="acme", workspace_name="prod"))
    assert 'backend "remote"' in text
    assert 'hostname     = "localhost:8443"' in text and 'organization = "acme"' in text and 'name = "prod"' in text


def test_cli_config_has_the_run_token_and_only_the_operators_installation_blocks() -> None:
    operator = """
# operator config
credentials "app.example" {
  token = "operator-secret"
}
provider_installation {
  filesystem_mirror {
    path    = "/opt/mirror" # {braces in comments}
    include = ["registry.terraform.io/hashicorp/*"]
  }
  direct { exclude = ["registry.terraform.io/hashicorp/*"] }
}
plugin_cache_dir = "/opt/cache"
"""
    text = render_cli_config("localhost:8443", "tok-123", operator)
    assert text.startswith('credentials "localhost:8443" {\n  token = "tok-123"\n}\n')
    assert 'credentials "127.0.0.1:8443" {\n  token = "tok-123"\n}\n' in text  # the module registry's host
    assert "operator-secret" not in text and "app.example" not in text
    assert 'path    = "/opt/mirror"' in text and "direct { exclude" in text
    assert 'plugin_cache_dir = "/opt/cache"' in text
    assert text.count("{") == text.count("}")
    assert operator_cli_blocks('credentials "x" { token = "y" }') == ""


def test_child_env_is_built_from_scratch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIA-runner")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "runner-aws-secret")
    monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/v2/credentials/x")
    monkeypatch.setenv("TERRACE_RUNNER_TOKEN", "the-runner-secret")
    env = child_env(
        path="/usr/bin:/bin",
        home=Path("/run/home"),
        cli_config=Path("/run/tfrc"),
        ssl_cert_file="/ca.pem",
        variables=[
            RunVariable(key="TF_VAR_x", value="1", category="env"),
            RunVariable(key="AWS_PROFILE", value="workspace-profile", category="env"),
            RunVariable(key="tfvar", value="2", category="terraform"),
        ],
    )
    assert env == {
        "PATH": "/usr/bin:/bin",
        "HOME": "/run/home",
        "TF_CLI_CONFIG_FILE": "/run/tfrc",
        "TF_FORCE_LOCAL_BACKEND": "1",
        "TF_IN_AUTOMATION": "1",
        "TF_INPUT": "0",
        "CHECKPOINT_DISABLE": "1",
        "SSL_CERT_FILE": "/ca.pem",
        "TF_VAR_x": "1",
        "AWS_PROFILE": "workspace-profile",
    }
    assert "the-runner-secret" not in env.values()


def test_child_of_a_real_job_sees_no_runner_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from runner_fakes import FakeApi, fake_terraform, runner_config, tarball
    from terrace.runner.execution import JobExecutor

    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "runner-aws-secret")
    monkeypatch.setenv("TERRACE_RUNNER_TOKEN", "the-runner-secret")
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": ""})})
    spec = make_spec("plan")
    fake.specs[spec.job_id] = spec
    binary = fake_terraform(tmp_path / "bin")
    api, transfers = fake.clients()
    JobExecutor(runner_config(tmp_path, binary), api, transfers, echo_to=io.StringIO()).execute(spec)
    seen = (tmp_path / "bin" / "call-2.env").read_text()  # the plan call
    assert "runner-aws-secret" not in seen and "the-runner-secret" not in seen and "AWS_SECRET" not in seen
    assert "TF_FORCE_LOCAL_BACKEND=1" in seen and "TF_LOG_PATH_X=sensitive-env-value" in seen


@pytest.mark.parametrize(
    ("operation", "extra"),
    [
        (Operation(), []),
        (Operation(is_destroy=True), ["-destroy"]),
        (Operation(refresh=False), ["-refresh=false"]),
        (Operation(refresh_only=True), ["-refresh-only"]),
        (Operation(target_addrs=["a.b", "module.m"]), ["-target=a.b", "-target=module.m"]),
        (Operation(replace_addrs=["a.b"]), ["-replace=a.b"]),
    ],
)
def test_plan_command_line_per_operation(operation: Operation, extra: list[str]) -> None:
    base = ["plan", "-input=false", "-no-color", "-out=/r/p.tfplan", "-detailed-exitcode"]
    assert commands.plan_args(operation, Path("/r/p.tfplan")) == base + extra


def test_apply_and_init_command_lines() -> None:
    assert commands.apply_args(Path("/r/p")) == ["apply", "-input=false", "-no-color", "/r/p"]
    assert commands.INIT_ARGS == ["init", "-input=false", "-no-color"]


def test_change_counts_from_json_plan() -> None:
    plan = {
        "resource_changes": [
            {"mode": "managed", "change": {"actions": ["create"]}},
            {"mode": "managed", "change": {"actions": ["create", "delete"]}},
            {"mode": "managed", "change": {"actions": ["update"]}},
            {"mode": "managed", "change": {"actions": ["delete"]}},
            {"mode": "managed", "change": {"actions": ["no-op"], "importing": {"id": "i-1"}}},
            {"mode": "data", "change": {"actions": ["read"]}},
        ]
    }
    assert commands.count_changes(plan) == commands.ChangeCounts(additions=2, changes=1, destructions=2, imports=1)
    assert commands.count_changes({}) == commands.ChangeCounts()


def _fake_binary(path: Path, version: str) -> str:
    path.write_text(f'#!/bin/sh\necho \'{{"terraform_version":"{version}"}}\'\n')
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_binary_selection(tmp_path: Path) -> None:
    default = _fake_binary(tmp_path / "tofu", "1.8.0")
    old = _fake_binary(tmp_path / "terraform-1.0.3", "1.0.3")
    assert commands.select_binary("latest", default, {"1.0.3": old}).path == default
    assert commands.select_binary("latest", default, {}).product == "OpenTofu"
    chosen = commands.select_binary("1.0.3", default, {"1.0.3": old})
    assert (chosen.path, chosen.version, chosen.product) == (old, "1.0.3", "Terraform")
    assert commands.select_binary("1.8.0", default, {}).path == default  # the default binary's own version
    with pytest.raises(RunSetupError, match=r"'0.13.0' is not installed on this runner; installed: 1.0.3, 1.8.0"):
        commands.select_binary("0.13.0", default, {"1.0.3": old})
    with pytest.raises(RunSetupError, match="not installed or not executable"):
        commands.select_binary("latest", str(tmp_path / "missing"), {})


def test_config_from_env() -> None:
    env = {
        "TERRACE_API_URL": "https://localhost:8443/",
        "TERRACE_RUNNER_TOKEN": "s",
        "TERRACE_RUNNER_ORGANIZATION": "acme",
        "TERRACE_RUNNER_RETIRE_AT": "1700000000",
        "TERRACE_TF_BINARIES": "1.0.3=/opt/tf103, v1.6.0=/opt/tofu",
        "TERRACE_RUNNER_IDLE_EXIT_S": "30",
        "TERRACE_RUNNER_ID": "r1",
        "TERRACE_WORK_DIR": "/w",
    }
    config = RunnerConfig.from_env(env)
    assert config.api_url == "https://localhost:8443"
    assert (config.runner_token, config.organization, config.retire_at, config.wait_s) == ("s", "acme", 1.7e9, 5)
    assert "'s'" not in repr(config)  # the token stays out of logs
    assert config.tf_binaries == {"1.0.3": "/opt/tf103", "1.6.0": "/opt/tofu"}
    assert (config.idle_exit_s, config.runner_id, config.work_dir, config.tf_binary) == (
        30,
        "r1",
        Path("/w"),
        "terraform",
    )
    with pytest.raises(ConfigError, match="TERRACE_API_URL"):
        RunnerConfig.from_env({})
    with pytest.raises(ConfigError, match="version=path"):
        parse_binaries("nonsense")
    with pytest.raises(ConfigError, match="TERRACE_RUNNER_TOKEN"):
        RunnerConfig.from_env({**env, "TERRACE_RUNNER_TOKEN": ""})
