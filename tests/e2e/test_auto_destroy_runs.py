"""Ephemeral workspaces over real remote runs (Terraform 1.0.3, the `remote` backend, runner processes on the
embedded server, whose reaper ticks every second): a workspace whose resources are in state and whose
`auto-destroy-at` comes gets a destroy run from the reaper's sweep, applied without confirmation, and ends with an
empty state and `auto-destroy-at` cleared; its notification configuration gets the reminder (the time is less than
12 hours ahead) and the run's result, over real HTTP to a receiver on loopback."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from e2e_runs import RUN_TIMEOUT_S, current_state, remote_dir, remote_workspace, runs, wait_final, wait_for
from test_notifications import _configure, _signed, receiver  # noqa: F401 (the receiver fixture)

pytestmark = pytest.mark.e2e

TWO = 'resource "null_resource" "a" {}\nresource "null_resource" "b" {}\n'


def _patch(api: Any, ws_id: str, attributes: dict[str, Any], expect: int = 200) -> Any:
    body = {"data": {"type": "workspaces", "attributes": attributes}}
    return api.request("PATCH", f"/api/v2/workspaces/{ws_id}", body, expect=expect).json()


def test_a_due_workspace_destroys_itself_and_notifies(run_stack, run_api, run_terraform, unique, receiver):  # noqa: F811
    hook = receiver(lambda n: 200)
    name = unique("ephemeral")
    ws_id = remote_workspace(run_api, name)
    tf = remote_dir(run_stack, run_terraform, name, TWO)
    tf.apply(timeout=RUN_TIMEOUT_S)
    assert current_state(run_api, ws_id)["resources"] == {"null_resource.a": 1, "null_resource.b": 1}
    _configure(run_api, ws_id, hook.url, ["workspace:auto_destroy_reminder", "workspace:auto_destroy_run_results"])

    at = (datetime.now(UTC) + timedelta(seconds=3)).strftime("%Y-%m-%dT%H:%M:%SZ")
    set_ = _patch(run_api, ws_id, {"auto-destroy-at": at})["data"]["attributes"]
    assert set_["auto-destroy-at"].startswith(at[:19]) and set_["auto-destroy-activity-duration"] is None

    def destroy_run() -> dict[str, Any] | None:
        return next((r for r in runs(run_api, ws_id) if r["attributes"]["is-destroy"]), None)

    queued = wait_for(destroy_run, timeout=60, what="the sweep to queue a destroy run")
    assert queued["attributes"]["source"] == "tfe-auto-destroy" and queued["attributes"]["auto-apply"] is True
    done = wait_final(run_api, queued["id"], timeout=RUN_TIMEOUT_S)
    assert done["attributes"]["status"] == "applied"  # nobody confirmed it
    assert current_state(run_api, ws_id)["resources"] == {}
    wait_for(lambda: run_api.workspace(name)["attributes"]["auto-destroy-at"] is None, what="auto-destroy-at cleared")
    assert len([r for r in runs(run_api, ws_id) if r["attributes"]["is-destroy"]]) == 1  # the sweep queued one

    def triggers() -> list[str]:
        return [n["notifications"][0]["trigger"] for n in hook.notifications()]

    wait_for(lambda: "workspace:auto_destroy_run_results" in triggers(), what="the run's result notification")
    assert triggers()[0] == "verification" and "workspace:auto_destroy_reminder" in triggers()
    assert all(_signed(headers, body) for headers, body in hook.requests)
    [result] = [n for n in hook.notifications() if n["notifications"][0]["trigger"].endswith("run_results")]
    assert result["run_id"] == queued["id"] and result["notifications"][0]["run_status"] == "applied"
    [reminder] = [n for n in hook.notifications() if n["notifications"][0]["trigger"].endswith("reminder")]
    assert reminder["workspace_id"] == ws_id and reminder["run_id"] is None
