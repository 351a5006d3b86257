"""A workspace runs its own tool: the one of the CLI whose `cloud` block created it, whatever the deployment's
default tool. 1.9.4 and 1.11.4 are releases of both terraform and OpenTofu, and runners fetch what they lack
(`tool_downloads`, from a mirror nobody answers here): OpenTofu 1.9.4's workspace on a deployment whose default tool
is terraform runs the OpenTofu 1.9.4 the runners hold (not a download of Terraform 1.9.4), terraform 1.11's on a
deployment whose default is OpenTofu runs Terraform 1.11.4; a plan the other tool's CLI sends errors at once,
naming the workspace's tool."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_runs import runs
from job_uids import traversable
from terrace.local.stack import LocalStack


def _harness() -> Any:
    """tests/e2e/conftest.py itself (a session of unit and e2e tests imports tests/unit's as `conftest`)."""
    if "e2e_harness" in sys.modules:
        return sys.modules["e2e_harness"]
    spec = importlib.util.spec_from_file_location("e2e_harness", Path(__file__).with_name("conftest.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["e2e_harness"] = module
    spec.loader.exec_module(module)
    return module


_h = _harness()
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]
TOFU = Path(os.environ.get("TERRACE_TEST_TOFU", "/work/shared/tools/opentofu/tofu"))
TERRAFORM_111 = Path(os.environ.get("TERRACE_TEST_TERRAFORM_CLOUD", "/usr/local/bin/terraform"))
NOWHERE = "https://127.0.0.1:9/releases"  # a mirror that refuses at once: a run that needs a download errors
CLIENT_TIMEOUT_S = 240


@pytest.fixture(scope="module", params=["terraform", "opentofu"])
def deployment(request: pytest.FixtureRequest) -> Iterator[tuple[str, Any, Any]]:
    """A deployment whose default tool is the parameter, its runners holding the host's binaries (terraform 1.0.3
    and 1.11, OpenTofu 1.9.4) and fetching the releases they lack."""
    default_tool = str(request.param)
    if not TOFU.exists() or not TERRAFORM_111.exists():
        pytest.skip(f"needs OpenTofu 1.9 at {TOFU} and terraform 1.11 at {TERRAFORM_111}")
    state_dir = traversable(Path(tempfile.mkdtemp(prefix="terrace-e2e-wstool-")))
    local = LocalStack(
        port=0, organization="tools", state_dir=state_dir, prefix=f"e2e-wstool-{uuid.uuid4().hex[:8]}",
        data_dir=state_dir / "data",
    )  # fmt: skip
    local.settings_overrides = {
        **_h.RUN_SETTINGS,
        "default_tool": default_tool,
        "tool_downloads": True,
        "tool_mirror_terraform": NOWHERE,
        "tool_mirror_opentofu": NOWHERE,
    }
    local.start()
    assert local.info is not None
    info = _h.StackInfo(**local.info.as_dict())
    api = _h.Api(info)
    try:
        yield default_tool, info, api
    finally:
        api.http.close()
        local.stop()
        shutil.rmtree(state_dir, ignore_errors=True)


def _cli(binary: Path, stack: Any, work: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = _h.client_env(stack, home)
    return subprocess.run(
        [str(binary), *args, "-no-color"], cwd=work, env=env, capture_output=True, text=True, timeout=CLIENT_TIMEOUT_S
    )


def _work(stack: Any, path: Path, workspace: str) -> Path:
    path.mkdir()
    (path / "main.tf").write_text(
        "terraform {\n  cloud {\n"
        f'    hostname     = "{stack.hostname}"\n    organization = "{stack.organization}"\n'
        f'    workspaces {{\n      name = "{workspace}"\n    }}\n  }}\n}}\n\noutput "x" {{\n  value = 1\n}}\n'
    )
    return path


def _plan_log(api: Any, run_id: str) -> str:
    url = api.request("GET", f"/api/v2/runs/{run_id}/plan").json()["data"]["attributes"]["log-read-url"]
    return str(api.http.get(url).text)


def _plan(binary: Path, stack: Any, api: Any, work: Path, home: Path, name: str) -> tuple[str, dict[str, Any]]:
    """init (the first creates the workspace) and a remote plan: the CLI's output and the workspace's last run."""
    init = _cli(binary, stack, work, home, "init", "-input=false")
    assert init.returncode == 0, init.stdout + init.stderr
    plan = _cli(binary, stack, work, home, "plan", "-input=false")
    ws = api.workspace(name)
    return plan.stdout + plan.stderr, runs(api, ws["id"])[-1]


def test_a_cloud_block_workspace_runs_the_tool_of_the_cli_that_created_it(
    deployment: tuple[str, Any, Any], tmp_path: Path
) -> None:
    default_tool, stack, api = deployment
    binary, tool, version, product = (
        (TOFU, "opentofu", "1.9.4", "OpenTofu")
        if default_tool == "terraform"
        else (TERRAFORM_111, "terraform", "1.11.4", "Terraform")
    )  # the tool that is not the deployment's default
    name = f"made-by-{tool}-{uuid.uuid4().hex[:6]}"
    output, run = _plan(binary, stack, api, _work(stack, tmp_path / "own", name), tmp_path / "home", name)
    attributes = api.workspace(name)["attributes"]
    assert (attributes["iac-platform"], attributes["terraform-version"]) == (tool, version)
    assert run["attributes"]["status"] == "planned_and_finished", (run["attributes"], output)
    assert run["attributes"]["terraform-version"] == version
    assert f"{product} v{version}" in _plan_log(api, run["id"])  # the runner's banner: the binary it ran
    if default_tool != "terraform":
        return
    # the other tool's CLI on the same workspace: errored at once, the workspace's tool named
    other = _work(stack, tmp_path / "other", name)
    output, run = _plan(TERRAFORM_111, stack, api, other, tmp_path / "home2", name)
    assert run["attributes"]["status"] == "errored"
    assert "runs OpenTofu (its iac-platform is opentofu)" in output, output
