"""`terraform apply -invoke=action.<type>.<name>` (terraform 1.14+) through a `cloud` block against Terrace.

The run carries the action in `invoke-action-addrs`; the runner must plan with `-invoke=...`, never a normal plan
and apply. No provider the tests hold offline (the null provider 2.1.2; the AWS provider of the host is 5.x, its
actions came in 6.x) offers an action, so the invoking run asks the runner's terraform 1.15.9 for an action the
configuration does not declare: its exact refusal must end the run, and nothing may be applied. A run whose runner
binary is terraform 1.0.3 (it has no `-invoke`) must error with Terrace's message instead of applying.

The client and the 1.15.9 runner binary are `../shared/tools/terraform-1.15/terraform` from the repository root
(TERRACE_TEST_TERRAFORM_115 overrides); the test skips when it is absent. Its stack links that binary into the
tool catalog before it starts, so workspaces pinned to 1.15.9 run on it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import BACKEND, RUN_SETTINGS, Api, StackInfo, client_env
from e2e_runs import runs
from job_uids import traversable
from terrace.local.stack import LocalStack

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]
REPO_ROOT = Path(__file__).resolve().parents[2]
TERRAFORM_115 = Path(
    os.environ.get("TERRACE_TEST_TERRAFORM_115", REPO_ROOT.parent / "shared" / "tools" / "terraform-1.15" / "terraform")
)
pytestmark.append(pytest.mark.skipif(not TERRAFORM_115.exists(), reason=f"terraform 1.15 is not at {TERRAFORM_115}"))
CLIENT_TIMEOUT_S = 300
BODY = 'resource "null_resource" "a" {}\n'
PROVIDERS = '  required_providers {\n    null = { source = "registry.terraform.io/hashicorp/null" }\n  }\n'


@pytest.fixture(scope="module")
def stack() -> Iterator[StackInfo]:
    """A run stack whose tool catalog holds terraform 1.15.9 besides the usual binaries."""
    state_dir = traversable(Path(tempfile.mkdtemp(prefix="terrace-e2e-actions-")))
    folder = state_dir / "tools" / "terraform" / "1.15.9"
    folder.mkdir(parents=True)
    for part in (state_dir / "tools", state_dir / "tools" / "terraform", folder):
        part.chmod(0o755)
    (folder / "terraform").symlink_to(TERRAFORM_115.resolve())
    local = LocalStack(
        port=0,
        organization="actions",
        state_dir=state_dir,
        prefix=f"e2e-actions-{uuid.uuid4().hex[:8]}",
        data_dir=None if BACKEND == "moto" else state_dir / "data",
    )
    local.settings_overrides = dict(RUN_SETTINGS)
    local.start()
    try:
        assert local.info is not None
        yield StackInfo(**local.info.as_dict())
    finally:
        local.stop()
        shutil.rmtree(state_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def api(stack: StackInfo) -> Iterator[Api]:
    client = Api(stack)
    yield client
    client.http.close()


def working_dir(stack: StackInfo, path: Path, name: str) -> tuple[Path, dict[str, str]]:
    path.mkdir()
    (path / "main.tf").write_text(
        "terraform {\n" + PROVIDERS + "  cloud {\n"
        f'    hostname     = "{stack.hostname}"\n    organization = "{stack.organization}"\n'
        f'    workspaces {{\n      name = "{name}"\n    }}\n  }}\n}}\n' + BODY
    )
    return path, client_env(stack, path.parent / f"{name}-home")


def terraform(path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TERRAFORM_115), *args, "-no-color"],
        cwd=path,
        env=env,
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT_S,
    )


def invoking_run(api: Api, stack: StackInfo, tmp_path: Path, version: str) -> tuple[dict[str, Any], str]:
    name = f"act-{version.replace('.', '-')}-{uuid.uuid4().hex[:6]}"
    ws_id = api.create_workspace(name, **{"execution-mode": "remote", "terraform-version": version})["id"]
    path, env = working_dir(stack, tmp_path / name, name)
    init = terraform(path, env, "init", "-input=false")
    assert init.returncode == 0, init.stdout + init.stderr
    done = terraform(path, env, "apply", "-auto-approve", "-invoke=action.null_missing.go")
    output = done.stdout + done.stderr
    assert done.returncode != 0, output  # never a normal plan and apply
    (only,) = runs(api, ws_id)
    assert api.workspace(name)["relationships"]["current-state-version"]["data"] is None, output  # nothing applied
    return only, output


def test_apply_invoke_reaches_the_runner_s_terraform(api: Api, stack: StackInfo, tmp_path: Path) -> None:
    run, output = invoking_run(api, stack, tmp_path, "1.15.9")
    assert run["attributes"]["invoke-action-addrs"] == ["action.null_missing.go"]
    assert run["attributes"]["status"] == "errored"
    assert "action action.null_missing.go does not exist in the configuration" in output  # the runner's plan's


def test_a_runner_terraform_older_than_1_14_errors_the_invoking_run(api: Api, stack: StackInfo, tmp_path: Path) -> None:
    run, output = invoking_run(api, stack, tmp_path, "1.0.3")
    assert run["attributes"]["status"] == "errored"
    assert "needs Terraform 1.14 or newer" in output and "Terraform v1.0.3" in output
