"""Job children run as a job uid of their own, cannot read the runner's secrets, and leave nothing behind."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from runner_fakes import FakeApi, fake_terraform, make_spec, runner_config, tarball, traversable
from terrace.runner import sandbox
from terrace.runner.execution import JobExecutor
from terrace.runner.process import CancelControl, run_child

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not sandbox.probe().switch_uid, reason="job uids need a root runner with setpriv"
)


def run(tmp_path: Path, script: str, identity: sandbox.JobIdentity | None) -> tuple[int, str]:
    out = bytearray()
    traversable(tmp_path)
    code = run_child(
        ["/bin/sh", "-c", script],
        cwd=Path("/"),
        env={"PATH": "/usr/bin:/bin"},
        sink=out.extend,
        control=CancelControl(),
        identity=identity,
    )
    return code, out.decode()


# Tests take job uids from the host's real lock folder, like runners do: a private folder would hand out a uid an
# e2e runner on the same host holds, and the allocation's kill of that uid would kill the runner's job.
@pytest.fixture
def identity() -> Iterator[sandbox.JobIdentity]:
    ident = sandbox.allocate()
    assert ident is not None
    yield ident
    sandbox.kill_uid(ident.uid)
    ident.release()


def test_a_setsid_background_loop_does_not_outlive_the_child(tmp_path: Path, identity: sandbox.JobIdentity) -> None:
    marker = f"terrace-setsid-{os.getpid()}"  # this test's own process, not another test run's on the host
    code, _ = run(
        tmp_path, f"setsid bash -c 'exec -a {marker} sleep 300' </dev/null >/dev/null 2>&1 & echo started", identity
    )
    assert code == 0
    assert sandbox.uid_pids(identity.uid) == []
    assert not [p for p in os.listdir("/proc") if p.isdigit() and _cmdline(p).startswith(marker)]


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""


def test_the_child_is_not_the_runner_and_cannot_read_its_secrets(tmp_path: Path, identity: sandbox.JobIdentity) -> None:
    secret = tmp_path / "secret"
    secret.write_text("runner-secret-value")
    secret.chmod(0o600)
    probe = f"id -u; cat /proc/{os.getpid()}/environ; cat {secret}; ls /proc | grep -c '^[0-9]' ; true"
    code, out = run(tmp_path, probe, identity)
    assert code == 0
    lines = out.splitlines()
    assert int(lines[0]) == identity.uid != os.geteuid()
    assert "runner-secret-value" not in out and "PATH=" not in out
    if sandbox.probe().namespace_prefix:  # its own /proc: only its own few processes
        assert "Permission denied" in out or "No such file" in out


def test_two_concurrent_jobs_get_different_uids(tmp_path: Path) -> None:
    first = sandbox.allocate()
    code = (
        "import sys; sys.path[:0] = sys.argv[2:]; from pathlib import Path; from terrace.runner import sandbox;"
        "print(sandbox.allocate(lock_dir=Path(sys.argv[1])).uid)"
    )
    other = subprocess.run(
        [sys.executable, "-c", code, str(sandbox.LOCK_DIR), *sys.path], capture_output=True, text=True, check=True
    )
    assert first is not None and int(other.stdout) != first.uid
    first.release()


def test_a_job_leaves_no_process_and_no_folder(tmp_path: Path) -> None:
    marker = f"terrace-leftover-{os.getpid()}"
    body = f"setsid bash -c 'exec -a {marker} sleep 300' </dev/null >/dev/null 2>&1 &"
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": ""})})
    spec = make_spec("plan")
    fake.specs[spec.job_id] = spec
    binary = fake_terraform(tmp_path / "bin", plan_body=body, plan_exit=0)
    api, transfers = fake.clients()
    config = runner_config(tmp_path, binary)
    seen: list[int] = []
    original = sandbox.allocate

    def spy(*args: object, **kwargs: object) -> sandbox.JobIdentity | None:
        ident = original()
        seen.append(ident.uid if ident else -1)
        return ident

    sandbox.allocate = spy
    try:
        JobExecutor(config, api, transfers, echo_to=io.StringIO()).execute(spec)
    finally:
        sandbox.allocate = original
    assert seen and seen[0] > 0 and sandbox.uid_pids(seen[0]) == []
    assert not [p for p in os.listdir("/proc") if p.isdigit() and marker in _cmdline(p)]
    assert list(config.work_dir.iterdir()) == []
    assert oct(config.work_dir.stat().st_mode & 0o777) == "0o711"


def test_a_sigkilled_runner_takes_the_job_tree_down(tmp_path: Path) -> None:
    if not sandbox.probe().namespace_prefix:
        pytest.skip("no PID namespace on this host (unshare unavailable)")
    marker = f"terrace-orphan-{os.getpid()}"
    code = (
        "import sys, os; sys.path[:0] = sys.argv[1:]; from pathlib import Path;"
        "from terrace.runner.process import run_child, CancelControl;"
        f"run_child(['/bin/sh', '-c', \"setsid bash -c 'exec -a {marker} sleep 300' & sleep 300\"], cwd=Path('/'),"
        "env={'PATH': '/usr/bin:/bin'}, sink=lambda b: None, control=CancelControl())"
    )
    runner = subprocess.Popen([sys.executable, "-c", code, *sys.path])
    try:
        deadline = time.monotonic() + 60
        while not [p for p in os.listdir("/proc") if p.isdigit() and marker in _cmdline(p)]:
            assert time.monotonic() < deadline, "the job never started"
            time.sleep(0.05)
    finally:
        runner.kill()
        runner.wait()
    deadline = time.monotonic() + 60
    while [p for p in os.listdir("/proc") if p.isdigit() and marker in _cmdline(p)]:
        assert time.monotonic() < deadline, "a job process outlived the SIGKILLed runner"
        time.sleep(0.05)


def test_a_uid_a_killed_runner_held_starts_without_its_temporary_files(tmp_path: Path) -> None:
    """A runner SIGKILLed mid-job never swept its job uid's files from the shared temporary folders: the next job
    given that uid must not find (and read) them (issue 30's kill proof)."""
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    held = sandbox.allocate()  # a uid no runner of this host holds, held by the test throughout (see `identity`)
    assert held is not None
    uid = held.uid
    left = shared / "provider-secret.txt"
    left.write_text("the previous job's")
    os.chown(left, uid, uid)

    ident = sandbox.allocate(lock_dir=tmp_path / "locks", uid_range=(uid, uid), temp_roots=(shared,))
    assert ident is not None
    try:
        assert ident.uid == uid
        assert not left.exists()
    finally:
        ident.release()
        held.release()
