"""OPA policies on remote runs of the `cloud` block of terraform 1.11 and OpenTofu 1.9 (and 1.15.9, a client
repeat, where `TERRACE_TEST_TERRAFORM_115` or the shared tools hold it): a mandatory policy's
failure stops the run before its apply, an advisory one is reported and the apply goes on; both clients print the
evaluation as they do for HCP Terraform (the "OPA Policy Evaluation" summary, read from the task stage and its
policy set outcomes), once: the run's policy checks, which older clients print, are not listed to them. Skips
with its reason when terraform 1.11 is absent (TERRACE_TEST_TERRAFORM_CLOUD overrides the path)."""

from __future__ import annotations

from typing import Any

import pytest
from e2e_runs import runs
from test_cloud_block import CLIENTS, TERRAFORM_111, TOFU_REPEATS, Client, work, workspace  # noqa: F401 - a fixture
from tf115_stack import TERRAFORM_115 as TERRAFORM_115_PATH

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.timeout(900),
    pytest.mark.skipif(
        not TERRAFORM_111.available(), reason=f"terraform 1.11 is not installed at {TERRAFORM_111.binary}"
    ),
]

# terraform 1.15.9 prints OPA results from the post-plan task stage as 1.11 does (1.16 also reads them as native
# policy results: `tests/unit/test_tf_policy_evaluations.py` replays its calls); a path 1.11 covers in `make test`
TERRAFORM_115 = Client("terraform-1.15", TERRAFORM_115_PATH, "Terraform")
NEWEST = pytest.param(
    TERRAFORM_115,
    id=TERRAFORM_115.name,
    marks=[
        pytest.mark.skipif(not TERRAFORM_115.available(), reason=f"terraform 1.15 is not at {TERRAFORM_115.binary}"),
        pytest.mark.client_repeat,
    ],
)
REGO = """package terraform.policies.{name}
import rego.v1

deny contains msg if {{
    some rc in input.plan.resource_changes
    rc.type == "null_resource"
    "create" in rc.change.actions
    msg := sprintf("%s may not be created in %s", [rc.address, input.run.workspace.name])
}}
"""


def policy_set(run_api: Any, name: str, level: str, ws_id: str) -> str:
    """An OPA policy `name` (denying new null resources) in a set of its own applied to one workspace."""
    org = run_api.stack.organization
    body = {
        "data": {
            "type": "policies",
            "attributes": {
                "name": name,
                "kind": "opa",
                "query": f"data.terraform.policies.{name}.deny",
                "enforcement-level": level,
            },
        }
    }
    policy = run_api.request("POST", f"/api/v2/organizations/{org}/policies", body, expect=201).json()["data"]
    uploaded = run_api.http.put(f"/api/v2/policies/{policy['id']}/upload", content=REGO.format(name=name).encode())
    assert uploaded.status_code == 200, uploaded.text
    relationships = {
        "policies": {"data": [{"type": "policies", "id": policy["id"]}]},
        "workspaces": {"data": [{"type": "workspaces", "id": ws_id}]},
    }
    body = {"data": {"type": "policy-sets", "attributes": {"name": f"set-{name}", "kind": "opa"},
                     "relationships": relationships}}  # fmt: skip
    return str(
        run_api.request("POST", f"/api/v2/organizations/{org}/policy-sets", body, expect=201).json()["data"]["id"]
    )


@pytest.mark.parametrize("client", CLIENTS)
def test_a_mandatory_policy_stops_the_apply(run_api, work, unique, client):  # noqa: F811
    name = unique("opamand").replace("-", "_")
    ws_id = workspace(run_api, name, client)
    policy_set(run_api, name, "mandatory", ws_id)
    tf = work(client, f'name = "{name}"')

    output = tf.run("apply", "-auto-approve", "-input=false", check=False)

    assert "OPA Policy Evaluation" in output, output
    assert "Overall Result: FAILED" in output, output
    assert f"Policy name: {name}" in output and "Failed" in output, output
    assert "Apply complete" not in output
    (only,) = runs(run_api, ws_id)
    assert only["attributes"]["status"] == "errored"
    assert run_api.workspace(name)["relationships"]["current-state-version"]["data"] is None
    [check] = run_api.request("GET", f"/api/v2/runs/{only['id']}/policy-checks").json()["data"]
    report = run_api.request("GET", f"/api/v2/policy-checks/{check['id']}/output").text
    assert f"- null_resource.a may not be created in {name}" in report


@pytest.mark.parametrize("client", [*TOFU_REPEATS, NEWEST])
def test_an_advisory_policy_reports_and_the_apply_goes_on(run_api, work, unique, client):  # noqa: F811
    name = unique("opaadv").replace("-", "_")
    ws_id = workspace(run_api, name, client)
    policy_set(run_api, name, "advisory", ws_id)
    tf = work(client, f'name = "{name}"')

    output = tf.run("apply", "-auto-approve", "-input=false")

    assert output.count("OPA Policy Evaluation") == 1, output
    assert "Overall Result: PASSED (with advisory)" in output, output
    assert "Advisory" in output
    assert "Policy Check" not in output  # printed once: the run's policy checks are not this client's
    assert "Apply complete! Resources: 1 added, 0 changed, 0 destroyed." in output
    (only,) = runs(run_api, ws_id)
    assert only["attributes"]["status"] == "applied"
