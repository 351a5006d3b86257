"""Scheduling of remote runs through Terraform 1.0.3: the workspace queue keeps applies in creation order,
speculative plans bypass it, a runner killed mid-plan is replaced and the plan retried, a failing plan errors."""

from __future__ import annotations

import os
import re
import signal
from datetime import datetime
from pathlib import Path

import pytest
from e2e_runs import (
    RUN_TIMEOUT_S,
    remote_dir,
    remote_workspace,
    runs,
    slow_plan,
    wait_final,
    wait_for,
    wait_run,
)

pytestmark = pytest.mark.e2e

A_ONLY = 'resource "null_resource" "a" {}\n'
A_AND_B = A_ONLY + 'resource "null_resource" "b" {}\n'


def _at(run: dict, key: str) -> datetime:
    return datetime.fromisoformat(run["attributes"]["status-timestamps"][key].replace("Z", "+00:00"))


def _children(pid: int) -> list[int]:
    """Processes whose parent is `pid` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def test_concurrent_applies_run_in_creation_order(run_stack, run_api, run_terraform, unique):
    name = unique("order")
    ws_id = remote_workspace(run_api, name)
    first_tf = remote_dir(run_stack, run_terraform, name, A_ONLY, name="first")
    second_tf = remote_dir(run_stack, run_terraform, name, A_AND_B, name="second")

    first = first_tf.start("apply", "-auto-approve", "-input=false", "-no-color")
    try:
        wait_for(lambda: runs(run_api, ws_id), 30, what="the first run")
        second = second_tf.start("apply", "-auto-approve", "-input=false", "-no-color")
        try:
            first_result = first_tf.finish(first, ("apply",), timeout=RUN_TIMEOUT_S)
            second_result = second_tf.finish(second, ("apply",), timeout=RUN_TIMEOUT_S)
        finally:
            if second.poll() is None:
                second.kill()
    finally:
        if first.poll() is None:
            first.kill()

    assert "Resources: 1 added, 0 changed, 0 destroyed." in first_result.output
    assert "Resources: 1 added, 0 changed, 0 destroyed." in second_result.output  # only b: a existed already
    older, newer = runs(run_api, ws_id)
    assert older["attributes"]["status"] == newer["attributes"]["status"] == "applied"
    assert _at(newer, "planning-at") >= _at(older, "applied-at")


def test_speculative_plan_runs_while_an_apply_waits_for_a_user_lock(run_stack, run_api, run_terraform, unique):
    name = unique("spec")
    ws_id = remote_workspace(run_api, name)
    apply_tf = remote_dir(run_stack, run_terraform, name, A_ONLY, name="apply")
    plan_tf = remote_dir(run_stack, run_terraform, name, A_AND_B, name="plan")
    run_api.lock(ws_id, "maintenance")

    applying = apply_tf.start("apply", "-auto-approve", "-input=false", "-no-color")
    try:
        pending = wait_run(run_api, ws_id, {"pending"}, timeout=30, process=applying)

        planned = plan_tf.run("plan", "-no-color", timeout=RUN_TIMEOUT_S)

        assert "Plan: 2 to add, 0 to change, 0 to destroy." in planned.output
        statuses = {r["id"]: r["attributes"]["status"] for r in runs(run_api, ws_id)}
        assert statuses.pop(pending["id"]) == "pending"  # still behind the user's lock
        assert list(statuses.values()) == ["planned_and_finished"]

        run_api.unlock(ws_id)
        applied = apply_tf.finish(applying, ("apply",), timeout=RUN_TIMEOUT_S)
    finally:
        if applying.poll() is None:
            applying.kill()
        if run_api.workspace(name)["attributes"]["locked"]:
            run_api.request("POST", f"/api/v2/workspaces/{ws_id}/actions/force-unlock", {}, expect=None)

    # The pending run is the workspace's current run, so the CLI knows it waits for the user's lock.
    assert "Waiting for the manually locked workspace to be unlocked" in applied.output
    assert "Apply complete! Resources: 1 added, 0 changed, 0 destroyed." in applied.output
    assert wait_final(run_api, pending["id"])["attributes"]["status"] == "applied"


def test_a_runner_killed_mid_plan_is_replaced_and_the_plan_retried(
    run_local_stack, run_stack, run_api, run_terraform, unique
):
    name = unique("kill")
    ws_id = remote_workspace(run_api, name)
    tf = remote_dir(run_stack, run_terraform, name, slow_plan(SLOW_COUNT))
    launcher = run_local_stack.launcher
    process = tf.start("plan", "-no-color", "-input=false")
    try:
        planning = wait_run(run_api, ws_id, {"planning"}, timeout=60, process=process)
        busy = wait_for(
            lambda: [
                (r, kids)
                for r in list(launcher.runners)
                if r.process.poll() is None and (kids := _children(r.process.pid))
            ],
            20,
            interval=0.1,
            what="a runner running terraform",
        )
        for runner, kids in busy:  # the whole task dies, as a Fargate task would
            runner.process.send_signal(signal.SIGKILL)
            for kid in kids:
                try:
                    os.killpg(kid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

        result = tf.finish(process, ("plan",), timeout=RUN_TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.kill()

    assert f"Plan: {SLOW_COUNT} to add, 0 to change, 0 to destroy." in result.output
    assert "the runner stopped sending heartbeats; retrying (2 of" in result.output  # the log says why
    planners = re.findall(r"Terrace runner (\S+): planning run", result.output)
    assert planners and planners[-1] not in {runner.runner_id for runner, _ in busy}  # another runner finished it
    ended = run_api.request("GET", f"/api/v2/runs/{planning['id']}").json()["data"]
    assert ended["attributes"]["status"] == "planned_and_finished"


def test_a_failing_plan_errors_with_its_log(run_stack, run_api, run_terraform, unique):
    name = unique("fail")
    ws_id = remote_workspace(run_api, name)
    tf = remote_dir(run_stack, run_terraform, name, MISSING_FILE)

    result = tf.run("plan", "-no-color", check=False, timeout=RUN_TIMEOUT_S)

    assert result.code != 0, result
    assert "missing.txt" in result.output
    assert "Invalid value for" in result.output or "no file exists" in result.output
    (only,) = runs(run_api, ws_id)
    assert only["attributes"]["status"] == "errored"


SLOW_COUNT = 1500
MISSING_FILE = """
locals {
  x = file("missing.txt")
}

output "x" {
  value = local.x
}
"""
