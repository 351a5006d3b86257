"""Terraform 1.0.3 runs whose apply reuses the plan's working folder on the runner that planned it (no second
init), and the fallback: the planning runner is gone, its held folder with it, and a fresh runner applies."""

from __future__ import annotations

import os
import ssl
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from e2e_runs import RUN_TIMEOUT_S, TERRAFORM, TWO_RESOURCES, remote_dir, remote_workspace, runs, wait_for

pytestmark = pytest.mark.e2e

INIT_LINE = "Initializing plugins and modules..."
REUSE_LINE = "Reusing the plan's working directory"


def _log(run_stack: Any, run_api: Any, kind: str, phase_id: str) -> str:
    url = run_api.request("GET", f"/api/v2/{kind}/{phase_id}").json()["data"]["attributes"]["log-read-url"]
    return httpx.get(url, verify=ssl.create_default_context(cafile=run_stack.ca_bundle), timeout=30).text


def _phase_logs(run_stack: Any, run_api: Any, run: dict[str, Any]) -> tuple[str, str]:
    plan_id = run["relationships"]["plan"]["data"]["id"]
    apply_id = run["relationships"]["apply"]["data"]["id"]
    return _log(run_stack, run_api, "plans", plan_id), _log(run_stack, run_api, "applies", apply_id)


def test_an_auto_apply_run_applies_in_its_plans_folder_without_a_second_init(
    run_local_stack, run_stack, run_api, run_terraform, unique
):
    name = unique("reuse")
    ws_id = remote_workspace(run_api, name, **{"auto-apply": True})
    tf = remote_dir(run_stack, run_terraform, name, TWO_RESOURCES)

    applied = tf.apply(timeout=RUN_TIMEOUT_S)

    assert "Apply complete! Resources: 2 added, 0 changed, 0 destroyed." in applied.output
    (run,) = runs(run_api, ws_id)
    assert run["attributes"]["status"] == "applied"
    plan_log, apply_log = _phase_logs(run_stack, run_api, run)
    assert INIT_LINE in plan_log
    assert REUSE_LINE in apply_log and INIT_LINE not in apply_log
    stored = run_local_stack.container.run_store.load(run["id"])
    assert stored.apply.runner_id == stored.plan.runner_id  # handed over in the plan's finish answer
    work = run_local_stack.state_dir / "runner-work"
    assert wait_for(lambda: not list(work.glob(f"*/{stored.plan.id}-*")), 30, what="the plan folder to go")


@pytest.mark.skipif(os.geteuid() != 0, reason="the held folder's owner and mode are checked as the runner's root")
def test_when_the_planning_runner_is_gone_a_fresh_runner_applies_and_nothing_is_left(
    run_local_stack, run_stack, run_api, run_terraform, unique
):
    name = unique("fallback")
    ws_id = remote_workspace(run_api, name)
    tf = remote_dir(run_stack, run_terraform, name, TWO_RESOURCES)
    cli = subprocess.Popen(
        [str(TERRAFORM), "apply", "-no-color"],
        cwd=tf.path,
        env={**tf.env, "TF_INPUT": "1"},
        text=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:

        def confirmable() -> dict[str, Any] | None:
            found = runs(run_api, ws_id)
            return found[0] if found and found[0]["attributes"]["actions"]["is-confirmable"] else None

        run = wait_for(confirmable, RUN_TIMEOUT_S, what="the plan to await confirmation")
        stored = run_local_stack.container.run_store.load(run["id"])
        work = run_local_stack.state_dir / "runner-work"
        (held,) = list(work.glob(f"*/{stored.plan.id}-*"))  # kept for its apply, in its runner's folder
        info = held.stat()
        assert (info.st_uid, info.st_mode & 0o777) == (0, 0o700)
        planner_id = (stored.plan.runner_id or "").split("@")[0]
        launcher = run_local_stack.launcher
        (planner,) = [r for r in launcher.runners if r.runner_id == planner_id]
        planner.process.terminate()  # the runner goes (as a retired or scaled-in one does) ...
        assert planner.process.wait(RUN_TIMEOUT_S) == 0
        assert not Path(held).exists()  # ... and its held folder with it
        output, _ = cli.communicate("yes\n", timeout=RUN_TIMEOUT_S)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.communicate()
    assert cli.returncode == 0, output
    assert "Apply complete! Resources: 2 added, 0 changed, 0 destroyed." in output
    (run,) = runs(run_api, ws_id)
    assert run["attributes"]["status"] == "applied"
    _, apply_log = _phase_logs(run_stack, run_api, run)
    assert INIT_LINE in apply_log and REUSE_LINE not in apply_log
    stored = run_local_stack.container.run_store.load(run["id"])
    assert stored.apply.runner_id != stored.plan.runner_id
