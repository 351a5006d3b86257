"""`terraform query` (terraform 1.14+, `*.tfquery.hcl` files with `list` blocks) through a `cloud` block against
Terrace: the CLI uploads its configuration, creates a query run (`POST /queries`), polls it and renders the JSON
lines of its log; the runner runs `terraform query -json` in the job sandbox.

No provider the tests hold offline has a list resource (the null provider 2.1.2, the host's AWS provider 5.x:
list resources came in 6.x), so the query asks the runner's terraform 1.15.9 to list `terraform_data`, which the
built-in provider cannot list: its exact refusal, made on the runner and rendered by the CLI from the log's JSON
lines, must end the query run errored. A query run whose runner binary is terraform 1.0.3 (no `query`) must error
with Terrace's message.

The client and the 1.15.9 runner binary are `../shared/tools/terraform-1.15/terraform` from the repository root
(TERRACE_TEST_TERRAFORM_115 overrides); the tests skip when it is absent. The stack links that binary into the
tool catalog before it starts, as `test_actions_cli.py`'s does.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import Api, StackInfo, client_env
from test_actions_cli import terraform
from tf115_stack import ABSENT, TERRAFORM_115, tf115_stack

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.timeout(600),
    pytest.mark.skipif(not TERRAFORM_115.exists(), reason=ABSENT),
]
QUERY = 'list "terraform_data" "all" {\n  provider = terraform\n}\n'


@pytest.fixture(scope="module")
def stack() -> Iterator[StackInfo]:
    with tf115_stack("query") as info:
        yield info


@pytest.fixture(scope="module")
def api(stack: StackInfo) -> Iterator[Api]:
    client = Api(stack)
    yield client
    client.http.close()


def querying(api: Api, stack: StackInfo, tmp_path: Path, version: str, *args: str) -> tuple[dict[str, Any], str]:
    """`terraform query ARGS` in a new `cloud` block workspace pinned to `version`: its one query run, the output."""
    name = f"query-{version.replace('.', '-')}-{uuid.uuid4().hex[:6]}"
    ws_id = api.create_workspace(name, **{"execution-mode": "remote", "terraform-version": version})["id"]
    path = tmp_path / name
    path.mkdir()
    (path / "main.tf").write_text(
        f'terraform {{\n  cloud {{\n    hostname     = "{stack.hostname}"\n'
        f'    organization = "{stack.organization}"\n    workspaces {{\n      name = "{name}"\n    }}\n  }}\n}}\n'
        'resource "terraform_data" "a" {}\n'
    )
    (path / "main.tfquery.hcl").write_text(QUERY)
    env = client_env(stack, tmp_path / f"{name}-home")
    init = terraform(path, env, "init", "-input=false")
    assert init.returncode == 0, init.stdout + init.stderr
    done = terraform(path, env, "query", *args)
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    (only,) = api.request("GET", f"/api/v2/workspaces/{ws_id}/queries").json()["data"]
    assert api.request("GET", f"/api/v2/workspaces/{ws_id}/runs").json()["data"] == [], output  # not a run
    return only, output


def test_terraform_query_runs_on_the_runner_and_the_cli_renders_its_json_lines(
    api: Api, stack: StackInfo, tmp_path: Path
) -> None:
    query, output = querying(api, stack, tmp_path, "1.15.9", "-generate-config-out=generated.tf")
    attributes = query["attributes"]
    assert attributes["status"] == "errored" and attributes["generate-config-out"] is True, output
    assert "Running query in" in output  # the cloud block's query header: it created and followed the query run
    # the runner's terraform query refused the list block; the CLI rendered that diagnostic from the JSON lines
    assert "Invalid list resource" in output, output
    assert "terraform.io/builtin/terraform does not support list resource" in output, output
    assert '"@level"' not in output  # rendered, not printed raw
    assert not (tmp_path / "generated.tf").exists()


def test_a_runner_terraform_older_than_1_14_errors_the_query_run(api: Api, stack: StackInfo, tmp_path: Path) -> None:
    query, output = querying(api, stack, tmp_path, "1.0.3")
    assert query["attributes"]["status"] == "errored" and query["attributes"]["generate-config-out"] is False
    assert "needs Terraform 1.14 or newer" in output and "Terraform v1.0.3" in output, output
