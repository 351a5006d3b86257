"""Health assessments end to end: a workspace applied by Terraform 1.11 (`cloud` block), assessed on its own by
the run stack's schedule (TERRACE_ASSESSMENT_INTERVAL_S short) on the runners with Terraform >= 1.5, which knows
`check` blocks: a failing check is a failed continuous validation, state edited behind the configuration's back
(a null_resource whose id is emptied: its refresh finds it gone) is drift, and no assessment runs while a run
holds the workspace."""

from __future__ import annotations

import json
from typing import Any

import pytest
from e2e_runs import runs, wait_final, wait_for
from test_cloud_block import TERRAFORM_111, work, workspace  # noqa: F401  (work: a fixture)

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.timeout(900),
    pytest.mark.skipif(not TERRAFORM_111.available(), reason=f"no {TERRAFORM_111.binary}"),
]
ASSESSED_TIMEOUT_S = 300
CHECKED = """
variable "expected" {
  type    = string
  default = "actual"
}

resource "null_resource" "a" {
  triggers = { v = "actual" }
}

check "matches" {
  assert {
    condition     = null_resource.a.triggers.v == var.expected
    error_message = "the trigger does not match"
  }
}
"""


def _applied(run_api: Any, make: Any, name: str, expected: str = "actual") -> tuple[str, Any]:
    ws_id = workspace(run_api, name, **{"terraform-version": ">= 1.5.0"})
    tf = make(TERRAFORM_111, f'name = "{name}"', CHECKED.replace('default = "actual"', f'default = "{expected}"'))
    tf.run("apply", "-auto-approve", "-input=false")
    return ws_id, tf


def _assessments(run_api: Any, ws_id: str, on: bool) -> None:
    body = {"data": {"type": "workspaces", "attributes": {"assessments-enabled": on}}}
    data = run_api.request("PATCH", f"/api/v2/workspaces/{ws_id}", body).json()["data"]
    assert data["attributes"]["assessments-enabled"] is on


def _result(run_api: Any, ws_id: str) -> dict[str, Any] | None:
    answer = run_api.request("GET", f"/api/v2/workspaces/{ws_id}/current-assessment-result", expect=None)
    return answer.json()["data"] if answer.status_code == 200 else None


def _assessed(run_api: Any, ws_id: str) -> dict[str, Any]:
    try:
        found: dict[str, Any] = wait_for(lambda: _result(run_api, ws_id), ASSESSED_TIMEOUT_S, 1, "an assessment")
    finally:
        _assessments(run_api, ws_id, False)
    same = run_api.request("GET", f"/api/v2/assessment-results/{found['id']}").json()["data"]
    assert same["attributes"] == found["attributes"]
    return found


def test_a_failing_check_is_a_failed_continuous_validation(run_api, work, unique):  # noqa: F811
    ws_id, _ = _applied(run_api, work, unique("checks"), expected="something else")
    _assessments(run_api, ws_id, True)

    result = _assessed(run_api, ws_id)["attributes"]

    assert result["succeeded"] is True and result["error-msg"] is None
    assert result["drifted"] is False and result["resources-drifted"] == 0 and result["resources-undrifted"] == 1
    assert result["all-checks-succeeded"] is False
    assert (result["checks-failed"], result["checks-passed"]) == (1, 0)
    assert [r["attributes"]["message"] for r in runs(run_api, ws_id)] != ["Health assessment"]  # not among runs
    assert len(runs(run_api, ws_id)) == 1


def test_state_changed_behind_the_configuration_is_drift(run_api, work, unique):  # noqa: F811
    ws_id, tf = _applied(run_api, work, unique("drift"))
    state = json.loads(tf.run("state", "pull"))
    state["resources"][0]["instances"][0]["attributes"]["id"] = ""  # refresh now finds the object gone
    state["serial"] += 1
    (tf.path / "edited.tfstate").write_text(json.dumps(state))
    tf.run("state", "push", "edited.tfstate")
    _assessments(run_api, ws_id, True)

    found = _assessed(run_api, ws_id)
    result = found["attributes"]

    assert result["succeeded"] is True and result["drifted"] is True
    assert (result["resources-drifted"], result["resources-undrifted"]) == (1, 0)
    plan = run_api.request("GET", found["links"]["json-output"], expect=None)
    assert plan.status_code == 307  # to the assessment's JSON plan


def test_no_assessment_runs_while_a_run_holds_the_workspace(run_local_stack, run_api, work, unique):  # noqa: F811
    ws_id, _ = _applied(run_api, work, unique("busy"))
    (applied,) = runs(run_api, ws_id)
    cv_id = applied["relationships"]["configuration-version"]["data"]["id"]
    body = {"data": {"type": "runs", "attributes": {"message": "holds the workspace", "is-destroy": True},
                     "relationships": {
        "workspace": {"data": {"type": "workspaces", "id": ws_id}},
        "configuration-version": {"data": {"type": "configuration-versions", "id": cv_id}}}}}  # fmt: skip
    held = run_api.request("POST", "/api/v2/runs", body, expect=201).json()["data"]["id"]
    wait_for(lambda: run_api.request("GET", f"/api/v2/runs/{held}").json()["data"]["attributes"]["actions"]
             ["is-confirmable"], 120, what="the run to await confirmation")  # fmt: skip
    table = run_local_stack.container.table
    _assessments(run_api, ws_id, True)

    # the schedule passes the workspace's slot twice (it moves its due time on), starting nothing
    first = wait_for(lambda: (table.get("assessments#schedule", ws_id) or {}).get("due_at"), 60, what="a skip")
    wait_for(lambda: (table.get("assessments#schedule", ws_id) or {}).get("due_at", first) > first, 60,
             what="a second skip")  # fmt: skip
    assert _result(run_api, ws_id) is None
    assert table.query(f"{ws_id}#assessments", index="gsi1") == []  # no assessment run was even created

    run_api.request("POST", f"/api/v2/runs/{held}/actions/discard", {}, expect=202)
    wait_final(run_api, held)
    assert _assessed(run_api, ws_id)["attributes"]["succeeded"] is True  # free again: assessed
