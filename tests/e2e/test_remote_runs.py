"""Remote execution through Terraform 1.0.3: plan, apply (confirmed on stdin or auto-approved), destroy,
discard, cancel, -target / -replace / -refresh-only. Runs execute on the run stack's runner processes."""

from __future__ import annotations

import json
import time

import pytest
from e2e_runs import (
    RUN_TIMEOUT_S,
    TWO_RESOURCES,
    confirm,
    current_state,
    remote_dir,
    remote_workspace,
    runs,
    slow_plan,
    wait_final,
    wait_for,
    wait_run,
)

pytestmark = pytest.mark.e2e

SLOW_COUNT = 2000  # null_resources with an unknown trigger: a plan of several seconds
A_ONLY = 'resource "null_resource" "a" {}\n'


def test_plan_streams_the_runner_output(run_stack, run_api, run_terraform, unique):
    name = unique("plan")
    ws_id = remote_workspace(run_api, name)
    tf = remote_dir(run_stack, run_terraform, name, A_ONLY)

    result = tf.run("plan", "-no-color", timeout=RUN_TIMEOUT_S)

    assert "null_resource.a will be created" in result.output
    assert "Plan: 1 to add, 0 to change, 0 to destroy" in result.output
    (only,) = runs(run_api, ws_id)
    assert only["attributes"]["status"] == "planned_and_finished"
    assert only["attributes"]["plan-only"] is True
    assert only["attributes"]["source"] == "terraform"  # the `remote` backend: Terraform-Version, no integration


def test_apply_confirmed_with_yes_on_stdin(run_stack, run_api, run_terraform, unique):
    name = unique("yes")
    ws_id = remote_workspace(run_api, name)
    tf = remote_dir(run_stack, run_terraform, name, TWO_RESOURCES)

    code, output = confirm(tf, "yes", "apply", "-no-color")

    assert code == 0, output
    assert "Do you want to perform these actions in workspace" in output
    assert "Apply complete! Resources: 2 added, 0 changed, 0 destroyed." in output
    # the cost estimate stage, as terraform prints it: null_resources have no price
    assert "Cost estimation:" in output and "Resources: 0 of 2 estimated" in output and "$0.00/mo +$0.00" in output
    (only,) = runs(run_api, ws_id)
    assert only["attributes"]["status"] == "applied"
    assert {"confirmed-at", "cost-estimated-at"} <= set(only["attributes"]["status-timestamps"])
    state = current_state(run_api, ws_id)
    assert state["resources"] == {"null_resource.a": 1, "null_resource.b": 1}
    assert state["outputs"]["greeting"] == "hello"
    assert state["outputs"]["a_id"].isdigit()
    shown = tf.run("output", "-json", timeout=RUN_TIMEOUT_S).stdout
    assert json.loads(shown)["greeting"]["value"] == "hello"
    assert json.loads(shown)["a_id"]["value"] == state["outputs"]["a_id"]


def test_answering_no_discards_the_run(run_stack, run_api, run_terraform, unique):
    name = unique("no")
    ws_id = remote_workspace(run_api, name)
    tf = remote_dir(run_stack, run_terraform, name, A_ONLY)

    code, output = confirm(tf, "no", "apply", "-no-color")

    assert code != 0
    assert "Apply discarded" in output
    (only,) = runs(run_api, ws_id)
    assert only["attributes"]["status"] == "discarded"
    assert run_api.workspace(name)["attributes"]["locked"] is False
    assert run_api.workspace(name)["relationships"]["current-state-version"]["data"] is None


def test_auto_approved_apply_then_destroy(run_stack, run_api, run_terraform, unique):
    name = unique("auto")
    ws_id = remote_workspace(run_api, name)
    tf = remote_dir(run_stack, run_terraform, name, TWO_RESOURCES)

    applied = tf.apply(timeout=RUN_TIMEOUT_S)

    assert "Apply complete! Resources: 2 added, 0 changed, 0 destroyed." in applied.output
    assert 'greeting = "hello"' in applied.output
    state = current_state(run_api, ws_id)
    assert state["resources"] == {"null_resource.a": 1, "null_resource.b": 1}
    assert run_api.workspace(name)["attributes"]["resource-count"] == 2

    destroyed = tf.run("destroy", "-auto-approve", "-input=false", "-no-color", timeout=RUN_TIMEOUT_S)

    assert "Apply complete! Resources: 0 added, 0 changed, 2 destroyed." in destroyed.output
    first, second = runs(run_api, ws_id)
    assert (first["attributes"]["is-destroy"], second["attributes"]["is-destroy"]) == (False, True)
    assert second["attributes"]["status"] == "applied"
    assert wait_for(lambda: run_api.workspace(name)["attributes"]["resource-count"] == 0, 30, what="0 resources")
    assert current_state(run_api, ws_id)["resources"] == {}


def test_target_replace_and_refresh_only(run_stack, run_api, run_terraform, unique):
    name = unique("flags")
    ws_id = remote_workspace(run_api, name)
    tf = remote_dir(run_stack, run_terraform, name, TWO_RESOURCES)

    targeted = tf.apply("-target=null_resource.a", timeout=RUN_TIMEOUT_S)

    assert "Apply complete! Resources: 1 added, 0 changed, 0 destroyed." in targeted.output
    assert "Not available for this plan, because it was created with the -target option." in targeted.output
    assert current_state(run_api, ws_id)["resources"] == {"null_resource.a": 1}
    first_id = current_state(run_api, ws_id)["outputs"].get("a_id")

    replaced = tf.apply("-replace=null_resource.a", timeout=RUN_TIMEOUT_S)

    assert "null_resource.a will be replaced, as requested" in replaced.output
    assert "Plan: 2 to add, 0 to change, 1 to destroy." in replaced.output
    state = current_state(run_api, ws_id)
    assert state["resources"] == {"null_resource.a": 1, "null_resource.b": 1}
    assert state["outputs"]["a_id"] != first_id

    refreshed = tf.run("plan", "-refresh-only", "-no-color", timeout=RUN_TIMEOUT_S)

    assert "No changes" in refreshed.output
    assert "will be created" not in refreshed.output and "replaced" not in refreshed.output
    attrs = [r["attributes"] for r in runs(run_api, ws_id)]
    assert [a["target-addrs"] for a in attrs] == [["null_resource.a"], None, None]
    assert [a["replace-addrs"] for a in attrs] == [None, ["null_resource.a"], None]
    assert [a["refresh-only"] for a in attrs] == [False, False, True]


def test_cancel_a_running_plan(run_stack, run_api, run_terraform, unique):
    name = unique("cancel")
    ws_id = remote_workspace(run_api, name)
    tf = remote_dir(run_stack, run_terraform, name, slow_plan(SLOW_COUNT))
    process = tf.start("plan", "-no-color", "-input=false")
    try:
        planning = wait_run(run_api, ws_id, {"planning"}, timeout=60, process=process)
        time.sleep(1)  # let terraform get going inside the runner

        run_api.request("POST", f"/api/v2/runs/{planning['id']}/actions/cancel", {}, expect=202)

        result = tf.finish(process, ("plan",), check=False, timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert result.code != 0, result
    ended = wait_final(run_api, planning["id"], timeout=30)
    assert ended["attributes"]["status"] == "canceled"
    assert ended["attributes"]["canceled-at"]
