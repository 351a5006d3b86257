"""The warm window with a real client (Terraform 1.11, `cloud` block): `terraform init` reads the workspace, which
starts one runner of plans for its organization before anything is uploaded; the `terraform plan` that follows
runs on it, no other runner started. The run stack's window is off (its other tests count runners): this test
turns it on for its own fresh organization and retires that runner at its end."""

from __future__ import annotations

import subprocess
import time
import uuid
from typing import Any

import pytest
from conftest import client_env
from terrace.services.runs.warm_window import WARM_LANES
from test_cloud_block import PROVIDERS, TERRAFORM_111

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.timeout(300),
    pytest.mark.skipif(
        not TERRAFORM_111.available(), reason=f"terraform 1.11 is not installed at {TERRAFORM_111.binary}"
    ),
]
WINDOW_S = 60
CONFIG = 'resource "null_resource" "a" {}\n'


def _terraform(path: Any, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [str(TERRAFORM_111.binary), *args, "-no-color", "-input=false"],
        cwd=path, env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"terraform {' '.join(args)} -> {done.returncode}\n{output}"
    return output


def test_terraform_init_starts_the_organizations_runner_and_its_plan_runs_there(
    run_local_stack: Any, run_api: Any, run_stack: Any, tmp_path: Any, tmp_path_factory: Any, monkeypatch: Any
) -> None:
    container, launcher = run_local_stack.container, run_local_stack.launcher
    org = f"warm-{uuid.uuid4().hex[:8]}"
    run_api.request("POST", "/api/v2/organizations", {"data": {"type": "organizations", "attributes": {
        "name": org, "email": "warm@example.com"}}}, expect=201)  # fmt: skip
    run_api.request("POST", f"/api/v2/organizations/{org}/workspaces", {"data": {"type": "workspaces", "attributes": {
        "name": "app", "execution-mode": "remote"}}}, expect=201)  # fmt: skip
    monkeypatch.setattr(container.warm_window, "window_s", WINDOW_S)
    monkeypatch.setattr(container.scaler, "_window_s", WINDOW_S)
    (tmp_path / "main.tf").write_text(
        "terraform {\n" + PROVIDERS + f'  cloud {{\n    hostname     = "{run_stack.hostname}"\n'
        f'    organization = "{org}"\n    workspaces {{\n      name = "app"\n    }}\n  }}\n}}\n' + CONFIG
    )
    env = client_env(run_stack, tmp_path_factory.mktemp("home"))
    try:
        _terraform(tmp_path, env, "init")
        deadline = time.monotonic() + 60
        while not (mine := [r for r in launcher.runners if r.organization == org]) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [r.lanes for r in mine] == [WARM_LANES]  # started by init's read: no configuration uploaded yet
        assert container.run_store.list_for_workspace(container.workspaces.find_id(org, "app")) == []
        output = _terraform(tmp_path, env, "plan")
        assert "1 to add" in output, output
        started = [r for r in launcher.started if r.organization == org]
        assert [r.runner_id for r in started] == [mine[0].runner_id]  # the plan ran there: no second runner
    finally:
        monkeypatch.undo()
        launcher.retire(org, 10)
