"""A runner SIGKILLed mid-apply (Terraform 1.0.3): the apply is not run again, the run ends errored with a log
that says so, the workspace is unlocked, and nothing of the dead attempt keeps running."""

from __future__ import annotations

import os
import shutil
import signal
import ssl
import tempfile
import time
import uuid
from pathlib import Path

import httpx
import pytest
from e2e_runs import RUN_TIMEOUT_S, remote_dir, remote_workspace, run, wait_final, wait_for, wait_run

pytestmark = pytest.mark.e2e


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _processes_mentioning(text: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and entry.name != str(os.getpid()):
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if text in cmdline:
                found.append(f"{entry.name}: {cmdline}")
    return found


def _provisioner(marker: Path) -> str:
    """Records that it started, then ticks forever: a long apply step whose every run leaves a trace."""
    command = f"echo start >> {marker}; while true; do echo tick >> {marker}; sleep 0.2; done"
    return f'resource "null_resource" "slow" {{\n  provisioner "local-exec" {{\n    command = "{command}"\n  }}\n}}\n'


def _apply_log(run_api, run_stack, run_id: str) -> str:
    apply_id = run(run_api, run_id)["relationships"]["apply"]["data"]["id"]
    log_url = run_api.request("GET", f"/api/v2/applies/{apply_id}").json()["data"]["attributes"]["log-read-url"]
    return httpx.get(log_url, verify=ssl.create_default_context(cafile=run_stack.ca_bundle), timeout=30).text


def test_a_runner_killed_mid_apply_errors_the_run_and_never_applies_again(
    run_local_stack, run_stack, run_api, run_terraform, unique
):
    # outside pytest's 0700 base folder (the job uid must reach and write it), below a folder that is not
    # world-writable (the runner removes what a job uid left in world-writable temporary folders)
    marker_dir = Path(tempfile.mkdtemp(prefix="terrace-e2e-marker-"))
    marker_dir.chmod(0o711)
    (marker_dir / "w").mkdir(mode=0o1777)
    (marker_dir / "w").chmod(0o1777)
    marker = marker_dir / "w" / f"provisioner-{uuid.uuid4().hex[:8]}.log"
    name = unique("interrupted")
    ws_id = remote_workspace(run_api, name)
    tf = remote_dir(run_stack, run_terraform, name, _provisioner(marker))
    launcher = run_local_stack.launcher
    process = tf.start("apply", "-auto-approve", "-input=false", "-no-color")
    try:
        applying = wait_run(run_api, ws_id, {"applying"}, timeout=RUN_TIMEOUT_S, process=process)
        wait_for(lambda: marker.exists() and "tick" in marker.read_text(), 60, interval=0.1, what="the provisioner")
        # the runner sends its log in batches (at most 1 s apart): kill it only once the server has the apply's
        # start, which the CLI must then show with the interruption
        wait_for(lambda: "Provisioning with" in _apply_log(run_api, run_stack, applying["id"]), 60, what="the log")
        busy = [r.process for r in list(launcher.runners) if r.process.poll() is None and _children(r.process.pid)]
        assert len(busy) == 1, "one runner is applying"
        busy[0].send_signal(signal.SIGKILL)  # only the runner: its job's processes must die with it

        wait_for(lambda: not _processes_mentioning(str(marker)), 30, interval=0.1, what="the dead attempt's processes")
        ended = wait_final(run_api, applying["id"], timeout=RUN_TIMEOUT_S)
        result = tf.finish(process, ("apply",), check=False, timeout=RUN_TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.kill()

    attributes = ended["attributes"]
    assert attributes["status"] == "errored", attributes
    assert "the apply was interrupted" in attributes["error-message"]
    assert result.code != 0
    assert "the apply was interrupted" in result.output and "state may be incomplete" in result.output
    assert not run_api.workspace(name)["attributes"]["locked"]
    apply_id = run(run_api, applying["id"])["relationships"]["apply"]["data"]["id"]
    log = _apply_log(run_api, run_stack, applying["id"])
    assert "check it before running again" in log and log.endswith("\x03")
    ticks = marker.read_text().count("tick")
    time.sleep(3)  # were any process of the dead attempt alive, it would tick ~15 more times
    text = marker.read_text()
    assert text.count("start") == 1, "the provisioner ran exactly once"
    assert text.count("tick") == ticks, "nothing of the dead attempt still runs"
    assert not _processes_mentioning(str(marker))
    shutil.rmtree(marker_dir, ignore_errors=True)
    # the killed runner could not remove its job folder (a dead Fargate task takes its disk along): do it here,
    # so later tests sharing the stack see a clean work dir (an apply in its plan's folder works in `plan-…-*`)
    plan_id = run(run_api, applying["id"])["relationships"]["plan"]["data"]["id"]
    work_dir = run_local_stack.state_dir / "runner-work"
    for left in [*work_dir.glob(f"*/{apply_id}-*"), *work_dir.glob(f"*/{plan_id}-*")]:
        shutil.rmtree(left)
