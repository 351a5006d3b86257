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

import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import Api, StackInfo, client_env
from e2e_runs import runs
from tf115_stack import ABSENT, TERRAFORM_115, tf115_stack

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]
pytestmark.append(pytest.mark.skipif(not TERRAFORM_115.exists(), reason=ABSENT))
CLIENT_TIMEOUT_S = 300
BODY = 'resource "null_resource" "a" {}\n'
PROVIDERS = '  required_providers {\n    null = { source = "registry.terraform.io/hashicorp/null" }\n  }\n'


@pytest.fixture(scope="module")
def stack() -> Iterator[StackInfo]:
    with tf115_stack("actions") as info:
        yield info


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
