"""The `terrace` CLI: admin commands through the services, and `terrace dev` as a real process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from terrace.bootstrap import build_aws
from terrace.cli import app
from terrace.config import Settings
from terrace.local import moto_twin
from terrace.wiring.local_resources import create_resources
from typer.testing import CliRunner

TERRACE = Path(sys.executable).parent / "terrace"


@pytest.fixture(scope="module")
def aws_env() -> Iterator[dict[str, str]]:
    with moto_twin.running() as endpoint:
        resources = create_resources(endpoint, f"t{uuid.uuid4().hex[:8]}")
        yield {**resources.env(), "TERRACE_AWS_ENDPOINT_URL": endpoint}


@pytest.fixture
def cli(aws_env, monkeypatch):
    for key, value in aws_env.items():
        monkeypatch.setenv(key, value)
    runner = CliRunner()
    return lambda *args: runner.invoke(app, list(args))


def test_user_token_and_organization(cli, aws_env):
    name = f"u{uuid.uuid4().hex[:6]}"
    created = cli("user", "create", name, "--site-admin")
    assert created.exit_code == 0, created.output
    assert "site admin" in created.output

    issued = cli("token", "create", "--user", name, "--description", "ci")
    assert issued.exit_code == 0, issued.output
    secret = issued.stdout.strip().splitlines()[-1]
    container = build_aws(Settings.from_env(aws_env))
    principal = container.accounts.authenticate(secret)
    assert principal.username == name and principal.site_admin

    org = f"o{uuid.uuid4().hex[:6]}"
    made = cli("org", "create", org, "--email", "ops@example.com", "--owner", name)
    assert made.exit_code == 0, made.output
    assert container.organizations.get(principal, org).owners == (principal.subject_id,)


def test_errors_are_messages_not_tracebacks(cli):
    name = f"u{uuid.uuid4().hex[:6]}"
    assert cli("user", "create", name).exit_code == 0
    duplicate = cli("user", "create", name)
    assert duplicate.exit_code == 1 and "taken" in duplicate.output
    assert cli("user", "create", "bad name!").exit_code == 1
    assert "no user named" in cli("token", "create", "--user", "ghost").output
    no_owner = cli("org", "create", "x1", "--email", "a@b.c", "--owner", "ghost")
    assert no_owner.exit_code == 1 and "no user named" in no_owner.output
    bad_email = cli("org", "create", "x2", "--email", "nope", "--owner", name)
    assert bad_email.exit_code == 1 and "email" in bad_email.output


def test_a_suspended_user_gets_no_token(cli, aws_env):
    name = f"u{uuid.uuid4().hex[:6]}"
    assert cli("user", "create", name).exit_code == 0
    container = build_aws(Settings.from_env(aws_env))
    user = container.accounts.find_user(name)
    container.users.set_flags(user.id, suspended=True)
    refused = cli("token", "create", "--user", name)
    assert refused.exit_code == 1 and "suspended" in refused.output
    assert container.accounts.list_tokens(user.id) == []


def test_admin_commands_need_a_stack(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for key in list(os.environ):
        if key.startswith("TERRACE_"):
            monkeypatch.delenv(key)
    result = CliRunner().invoke(app, ["user", "create", "someone"])
    assert result.exit_code == 1 and "no TERRACE_DATA_DIR or TERRACE_TABLE" in result.output


def _admin(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TERRACE), *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={k: v for k, v in env.items() if not k.startswith("TERRACE_")},
    )


def _dev(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [str(TERRACE), "dev", *args], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    dev_file = tmp_path / ".terrace" / "dev.json"
    deadline = time.monotonic() + 60
    while process.poll() is None and time.monotonic() < deadline:
        if dev_file.exists() and json.loads(dev_file.read_text() or "{}").get("pid") == process.pid:
            return process
        time.sleep(0.05)
    process.kill()
    raise AssertionError(process.communicate(timeout=5)[0])


def _stop(process: subprocess.Popen[str]) -> str:
    process.send_signal(signal.SIGTERM)
    output, _ = process.communicate(timeout=30)
    assert process.returncode == 0 and "Traceback" not in output, output
    return output


def test_make_dev_keeps_its_data_across_restarts_and_fresh_empties_it(tmp_path, free_port):
    env = {**os.environ, "TERRACE_PORT": str(free_port), "TERRACE_ORGANIZATION": "devorg"}
    first = _dev(tmp_path, env)
    try:
        assert _admin(tmp_path, env, "user", "create", "keeper").returncode == 0
    finally:
        _stop(first)
    assert (tmp_path / ".terrace" / "data" / "terrace.db").exists()
    stale = _admin(tmp_path, env, "user", "create", "nobody")  # dev.json names a server that is gone
    assert stale.returncode == 1 and "Traceback" not in stale.stderr
    assert stale.stderr.strip().count("\n") == 0 and "not running" in stale.stderr

    second = _dev(tmp_path, env)
    try:
        again = _admin(tmp_path, env, "user", "create", "keeper")
        assert again.returncode == 1 and "taken" in again.stderr  # the user survived the restart
    finally:
        _stop(second)
    third = _dev(tmp_path, env, "--fresh")
    try:
        assert _admin(tmp_path, env, "user", "create", "keeper").returncode == 0  # empty again
    finally:
        _stop(third)


def test_terrace_dev_writes_dev_json_and_stops_on_sigterm(tmp_path, free_port):
    port = free_port
    env = {**os.environ, "TERRACE_PORT": str(port), "TERRACE_ORGANIZATION": "devorg"}
    process = subprocess.Popen(
        [str(TERRACE), "dev", "--moto"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    dev_file = tmp_path / ".terrace" / "dev.json"
    try:
        deadline = time.monotonic() + 30
        while not dev_file.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert dev_file.exists(), process.communicate(timeout=5)[0] if process.poll() is not None else "timeout"
        info = json.loads(dev_file.read_text())
        assert {"url", "hostname", "token", "organization", "ca_bundle", "cli_config"} <= set(info)
        assert info["url"] == f"https://localhost:{port}" and info["hostname"] == f"localhost:{port}"
        assert info["organization"] == "devorg"
        assert Path(info["ca_bundle"]).exists() and Path(info["cli_config"]).exists()

        # admin commands find the running dev stack through its dev.json
        made = subprocess.run(
            [str(TERRACE), "user", "create", "carol"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env={k: v for k, v in env.items() if not k.startswith("TERRACE_")},
        )
        assert made.returncode == 0, made.stderr
    finally:
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=20)
    assert process.returncode == 0, output
    assert "SSL_CERT_FILE=" in output and "TF_CLI_CONFIG_FILE=" in output and 'backend "remote"' in output
    assert "stopping" in output
