"""OPA policies on remote runs of terraform 1.0.3's `remote` backend, which knows nothing of task stages and prints a
run's policy checks (each evaluation is one): the outcome with each failed policy's messages, then a mandatory
failure stops the command with terraform's own "policy check hard failed" error and no apply (an overridable one with
"soft failed", the run awaiting an override); an advisory failure is printed and the apply goes on (the check is done
only once its verdict reached the run, so the backend finds the run confirmable)."""

from __future__ import annotations

import pytest
from e2e_runs import RUN_TIMEOUT_S, remote_dir, remote_workspace, runs
from test_policy_cloud_block import policy_set

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

ONE = 'resource "null_resource" "a" {}\n'


def test_a_mandatory_failure_is_printed_and_stops_the_apply(run_stack, run_api, run_terraform, unique):
    name = unique("remmand").replace("-", "_")
    ws_id = remote_workspace(run_api, name)
    policy_set(run_api, name, "mandatory", ws_id)
    tf = remote_dir(run_stack, run_terraform, name, ONE)

    result = tf.run("apply", "-auto-approve", "-input=false", "-no-color", check=False, timeout=RUN_TIMEOUT_S)

    assert result.code != 0, result
    assert "Organization policy check:" in result.output, result
    assert "OPA policy evaluation: failed" in result.output
    assert f"{name} (mandatory): failed" in result.output
    assert f"- null_resource.a may not be created in {name}" in result.output
    assert "Error: Organization policy check hard failed." in result.output
    assert "Apply complete" not in result.output
    (only,) = runs(run_api, ws_id)
    assert only["attributes"]["status"] == "errored"
    assert run_api.workspace(name)["relationships"]["current-state-version"]["data"] is None


def test_an_advisory_failure_is_printed_and_the_apply_goes_on(run_stack, run_api, run_terraform, unique):
    name = unique("remadv").replace("-", "_")
    ws_id = remote_workspace(run_api, name)
    policy_set(run_api, name, "advisory", ws_id)
    tf = remote_dir(run_stack, run_terraform, name, ONE)

    result = tf.run("apply", "-auto-approve", "-input=false", "-no-color", timeout=RUN_TIMEOUT_S)

    assert result.output.count("Organization policy check:") == 1, result
    assert f"{name} (advisory): failed" in result.output
    assert f"- null_resource.a may not be created in {name}" in result.output
    assert "Apply complete! Resources: 1 added, 0 changed, 0 destroyed." in result.output
    (only,) = runs(run_api, ws_id)
    assert only["attributes"]["status"] == "applied"


def test_an_overridable_failure_stops_the_command_and_the_run_awaits_an_override(
    run_stack, run_api, run_terraform, unique
):
    """terraform 1.0.3 stops at a soft-failed check (even for an owner with `-auto-approve`); the run waits for an
    override through the UI or the API, then for its confirmation."""
    name = unique("remover").replace("-", "_")
    ws_id = remote_workspace(run_api, name)
    set_id = policy_set(run_api, name, "mandatory", ws_id)
    body = {"data": {"type": "policy-sets", "attributes": {"overridable": True}}}
    run_api.request("PATCH", f"/api/v2/policy-sets/{set_id}", body)
    tf = remote_dir(run_stack, run_terraform, name, ONE)

    result = tf.run("apply", "-auto-approve", "-input=false", "-no-color", check=False, timeout=RUN_TIMEOUT_S)

    assert result.code != 0, result
    assert f"- null_resource.a may not be created in {name}" in result.output
    assert "Error: Organization policy check soft failed." in result.output
    (only,) = runs(run_api, ws_id)
    assert only["attributes"]["status"] == "post_plan_awaiting_decision"
    [check] = run_api.request("GET", f"/api/v2/runs/{only['id']}/policy-checks").json()["data"]
    assert check["attributes"]["status"] == "soft_failed"
    run_api.request("POST", f"/api/v2/policy-checks/{check['id']}/actions/override", {})
    assert run_api.request("GET", f"/api/v2/runs/{only['id']}").json()["data"]["attributes"]["actions"][
        "is-confirmable"
    ]
