"""`terraform test -cloud-run=<host>/<org>/<name>/<provider>` against Terrace: terraform 1.15.9 reads the private
module, creates a test configuration version for it, uploads its working directory, creates a test run with the
test variables it was given, waits for it and renders the JSON lines of its log; the runner runs `terraform test
-json` in the job sandbox and reports the summary the CLI's exit code follows. The module's test variable (an
environment variable) reaches the tests.

The tests use the built-in `terraform_data` resource only (nothing to download). The client and the runner binary
are `../shared/tools/terraform-1.15/terraform` (TERRACE_TEST_TERRAFORM_115 overrides); the test skips when it is
absent. Its stack links that binary into the tool catalog, where it is the newest: a test run runs on the latest.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Api, StackInfo, client_env
from test_actions_cli import terraform
from tf115_stack import ABSENT, TERRAFORM_115, tf115_stack

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.timeout(600),
    pytest.mark.skipif(not TERRAFORM_115.exists(), reason=ABSENT),
]
MODULE = """variable "greeting" {
  type = string
}

resource "terraform_data" "hello" {
  input = "${var.greeting}, ${var.suffix}"
}

variable "suffix" {
  type    = string
  default = "nobody"
}

output "said" {
  value = terraform_data.hello.output
}
"""
TESTS = """variable "expected" {
  type = string
}

run "greets" {
  command = apply

  assert {
    condition     = output.said == "hello, ${var.expected}"
    error_message = "said ${output.said}"
  }
}
"""


@pytest.fixture(scope="module")
def stack() -> Iterator[StackInfo]:
    with tf115_stack("modtests") as info:
        yield info


@pytest.fixture(scope="module")
def api(stack: StackInfo) -> Iterator[Api]:
    client = Api(stack)
    yield client
    client.http.close()


def test_terraform_test_cloud_run_runs_the_module_s_tests_on_the_runner(
    api: Api, stack: StackInfo, tmp_path: Path
) -> None:
    org, name = stack.organization, f"greeter{uuid.uuid4().hex[:6]}"
    module = {"data": {"type": "registry-modules", "attributes": {"name": name, "provider": "aws",
                                                                   "registry-name": "private"}}}  # fmt: skip
    api.request("POST", f"/api/v2/organizations/{org}/registry-modules", module, expect=201)
    tests = f"/api/v2/organizations/{org}/tests/registry-modules/private/{org}/{name}/aws"
    variable = {"data": {"type": "vars", "attributes": {"key": "TF_VAR_greeting", "value": "hello",
                                                         "category": "env", "sensitive": True}}}  # fmt: skip
    api.request("POST", f"{tests}/vars", variable, expect=201)
    path = tmp_path / name
    (path / "tests").mkdir(parents=True)
    (path / "main.tf").write_text(MODULE)
    (path / "tests" / "main.tftest.hcl").write_text(TESTS)
    env = client_env(stack, tmp_path / "home")
    source = f"-cloud-run={stack.registry_hostname}/{org}/{name}/aws"  # a module host has a dot

    passed = terraform(path, env, "test", source, "-var=suffix=world", "-var=expected=world")
    output = passed.stdout + passed.stderr
    assert passed.returncode == 0, output
    assert "tests/main.tftest.hcl... pass" in output and "  greets... pass" in output, output
    assert "Success! 1 passed, 0 failed." in output, output
    assert '"@level"' not in output  # rendered from the log's JSON lines, not printed raw

    failed = terraform(path, env, "test", source, "-var=suffix=world", "-var=expected=moon")
    output = failed.stdout + failed.stderr
    assert failed.returncode == 1, output
    assert "said ***, world" in output, output  # the sensitive test variable's value is masked in the log
    assert "0 passed, 1 failed" in output, output

    listed = api.request("GET", f"{tests}/test-runs").json()["data"]
    assert sorted(run["attributes"]["test-status"] for run in listed) == ["fail", "pass"]
    assert all(run["attributes"]["status"] == "finished" for run in listed)
    names = [
        ws["attributes"]["name"] for ws in api.request("GET", f"/api/v2/organizations/{org}/workspaces").json()["data"]
    ]
    assert name not in names  # the module's test workspace is nobody's workspace
