"""Variable sets reaching remote runs: the runner's Terraform 1.0.3 gets a set's values (a sensitive one masked
in what terraform prints), and a priority set beats a `-var` given on the command line (the `cloud` block of
Terraform 1.11 sends run variables; 1.0.3's `remote` backend cannot)."""

from __future__ import annotations

from typing import Any

import pytest
from e2e_runs import RUN_TIMEOUT_S, current_state, remote_dir, remote_workspace, runs, wait_final
from test_cloud_block import CONFIG, TERRAFORM_111, outputs, work, workspace  # noqa: F401  (work: a fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

ECHO = """
variable "greeting" {}

resource "null_resource" "echo" {
  provisioner "local-exec" {
    command = "echo token=$SET_TOKEN greeting=${var.greeting}"
  }
}

output "greeting" {
  value = var.greeting
}
"""


def _varset(api: Any, name: str, workspace_id: str, variables: list[dict[str, Any]], **attrs: Any) -> str:
    body = {"data": {"type": "varsets", "attributes": {"name": name, "global": False, **attrs}, "relationships": {
        "workspaces": {"data": [{"type": "workspaces", "id": workspace_id}]},
        "vars": {"data": [{"type": "vars", "attributes": v} for v in variables]}}}}  # fmt: skip
    return str(api.request("POST", f"/api/v2/organizations/{api.stack.organization}/varsets", body, expect=201)
               .json()["data"]["id"])  # fmt: skip


def test_a_sets_values_reach_a_remote_run(run_stack, run_api, run_terraform, unique):
    name = unique("varset")
    ws_id = remote_workspace(run_api, name)
    token = f"tok-{unique('s')}"
    _varset(run_api, unique("creds"), ws_id, [
        {"key": "greeting", "value": "from the set", "category": "terraform"},
        {"key": "SET_TOKEN", "value": token, "category": "env", "sensitive": True}])  # fmt: skip
    tf = remote_dir(run_stack, run_terraform, name, ECHO)

    result = tf.apply(timeout=RUN_TIMEOUT_S)

    assert "Apply complete! Resources: 1 added" in result.output
    assert "token=*** greeting=from the set" in result.output  # the env value reached terraform, masked
    assert token not in result.output
    (run,) = runs(run_api, ws_id)
    wait_final(run_api, run["id"])
    assert current_state(run_api, ws_id)["outputs"]["greeting"] == "from the set"


@pytest.mark.skipif(not TERRAFORM_111.available(), reason=f"no {TERRAFORM_111.binary}")
def test_a_priority_set_beats_a_command_line_variable(run_api, work, unique):  # noqa: F811
    name = unique("prio")
    ws_id = workspace(run_api, name)
    varset = _varset(run_api, unique("pinned"), ws_id,
                     [{"key": "greeting", "value": "from the set", "category": "terraform"}])  # fmt: skip
    tf = work(TERRAFORM_111, f'name = "{name}"')

    tf.run("apply", "-auto-approve", "-input=false", "-var", "greeting=from the command line")
    assert outputs(tf)["greeting"] == "from the command line"  # a set is below -var...

    body = {"data": {"type": "varsets", "attributes": {"priority": True}}}
    run_api.request("PATCH", f"/api/v2/varsets/{varset}", body)
    tf.run("apply", "-auto-approve", "-input=false", "-var", "greeting=from the command line")
    assert outputs(tf)["greeting"] == "from the set"  # ...unless it is a priority set
    assert [r["attributes"]["status"] for r in runs(run_api, ws_id)] == ["applied", "applied"]
