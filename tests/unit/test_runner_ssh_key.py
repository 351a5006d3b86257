"""The runner side of SSH keys: the key of the job's workspace is a 0600 file of the job (owned by its uid) that
GIT_SSH_COMMAND names for `terraform init` only, never logged, and gone once init ends.

Not tested here: a whole `git clone` over ssh (no sshd on these machines). The GIT_SSH_COMMAND the runner builds is
parsed by the real OpenSSH client (`ssh -G`), and a real git runs it against a listener that receives ssh's banner."""

from __future__ import annotations

import io
import os
import shlex
import shutil
import socket
import subprocess
import threading
from pathlib import Path

import pytest
from runner_fakes import FakeApi, fake_terraform, make_spec, runner_config, tarball
from terrace.runner import sandbox, ssh_key
from terrace.runner.execution import JobExecutor

KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAAsecretpart\n-----END OPENSSH PRIVATE KEY-----"


def _env(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def test_the_workspace_key_is_a_job_file_for_init_only(tmp_path: Path) -> None:
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": "# config\n"})})
    spec = make_spec("plan", ssh_private_key=KEY)
    fake.specs[spec.job_id] = spec
    rec = tmp_path / "bin"
    script = fake_terraform(rec)
    api, transfers = fake.clients()
    report = JobExecutor(runner_config(tmp_path, script), api, transfers, echo_to=io.StringIO()).execute(spec)
    assert report.status == "finished", report.error_message

    init_env, plan_env = _env(rec / "call-1.env"), _env(rec / "call-2.env")
    command = shlex.split(init_env["GIT_SSH_COMMAND"])
    key_file = Path(command[command.index("-i") + 1])
    assert "StrictHostKeyChecking=accept-new" in command and "IdentitiesOnly=yes" in command
    assert (rec / "init-key").read_text() == KEY + "\n"
    mode, owner = (rec / "init-key-stat").read_text().split()
    assert mode == "600"
    if sandbox.probe().switch_uid:
        assert int(owner) != os.getuid()  # the job's uid, not the runner's
    assert "GIT_SSH_COMMAND" not in plan_env and "GIT_SSH_COMMAND" not in _env(rec / "call-3.env")
    assert not key_file.exists() and not key_file.parent.exists()
    log = bytes(fake.logs[spec.job_id]).decode()
    assert "secretpart" not in log
    assert ("has no passwd entry" in log) == (not ssh_key.usable_by(int(owner)))  # said when ssh could not run


def test_no_key_no_ssh_command(tmp_path: Path) -> None:
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": ""})})
    spec = make_spec("plan")
    fake.specs[spec.job_id] = spec
    rec = tmp_path / "bin"
    api, transfers = fake.clients()
    report = JobExecutor(runner_config(tmp_path, fake_terraform(rec)), api, transfers, echo_to=io.StringIO()).execute(
        spec
    )
    assert report.status == "finished" and "GIT_SSH_COMMAND" not in _env(rec / "call-1.env")


@pytest.mark.skipif(shutil.which("ssh") is None, reason="no OpenSSH client on this machine")
def test_openssh_accepts_the_command_the_runner_builds(tmp_path: Path) -> None:
    run_dir = tmp_path / "job"
    run_dir.mkdir()
    env = ssh_key.install(run_dir, KEY)
    command = shlex.split(env["GIT_SSH_COMMAND"])
    parsed = subprocess.run(
        [*command, "-G", "-p", "2222", "git@example.invalid"], capture_output=True, text=True, timeout=30
    )
    assert parsed.returncode == 0, parsed.stderr
    config = dict(line.split(" ", 1) for line in parsed.stdout.splitlines() if " " in line)
    assert config["identityfile"] == str(run_dir / "ssh" / "id_workspace")
    assert config["stricthostkeychecking"] == "accept-new" and config["batchmode"] == "yes"
    assert config["userknownhostsfile"] == str(run_dir / "ssh" / "known_hosts")
    assert (run_dir / "ssh" / "id_workspace").stat().st_mode & 0o777 == 0o600
    ssh_key.remove(run_dir)
    assert not (run_dir / "ssh").exists()


@pytest.mark.skipif(shutil.which("ssh") is None or shutil.which("git") is None, reason="no git or OpenSSH client")
def test_git_reaches_the_host_through_the_runner_s_ssh_command(tmp_path: Path) -> None:
    """A real git runs the real ssh the runner configured (its banner reaches our listener); no sshd is needed."""
    run_dir = tmp_path / "job"
    run_dir.mkdir()
    env = ssh_key.install(run_dir, KEY)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(60)
    port = listener.getsockname()[1]
    received: list[bytes] = []

    def serve() -> None:
        with listener:
            conn, _ = listener.accept()
            with conn:
                conn.settimeout(60)
                received.append(conn.recv(255))  # the client's identification string, sent first

    server = threading.Thread(target=serve)
    server.start()
    child_env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GIT_TERMINAL_PROMPT": "0", **env}
    result = subprocess.run(
        ["git", "ls-remote", f"ssh://git@127.0.0.1:{port}/modules.git"],
        env=child_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    server.join(timeout=60)
    assert result.returncode != 0  # the listener is no ssh server
    assert received and received[0].startswith(b"SSH-2.0-"), (received, result.stderr)
