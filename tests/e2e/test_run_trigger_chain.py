"""Run triggers with Terraform 1.0.3 on the run stack's runners: `terraform apply` in A applies; its run trigger
queues a run in B (which sets `auto-apply-run-trigger`), whose apply queues one in C, whose apply would queue one
in A again through a C→A trigger: A is in the chain, so that stops (C's other target, D, gets its run, which tells
the fan-out of C's apply has run)."""

from __future__ import annotations

import io
import ssl
import tarfile
from typing import Any

import httpx
import pytest
from e2e_runs import RUN_TIMEOUT_S, current_state, remote_dir, remote_workspace, run, runs, wait_for, wait_run

pytestmark = pytest.mark.e2e


def _trigger(api: Any, target: str, source: str) -> str:
    body = {"data": {"type": "run-triggers", "relationships": {"sourceable": {"data": {"type": "workspaces",
            "id": source}}}}}  # fmt: skip
    return str(api.request("POST", f"/api/v2/workspaces/{target}/run-triggers", body, expect=201).json()["data"]["id"])


def _upload(api: Any, stack: Any, workspace_id: str, main_tf: str) -> str:
    """A configuration version uploaded through the API (no run queued), as a CI pipeline would."""
    body = {"data": {"type": "configuration-versions", "attributes": {"auto-queue-runs": False}}}
    cv = api.request("POST", f"/api/v2/workspaces/{workspace_id}/configuration-versions", body, expect=201).json()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("main.tf")
        info.size = len(main_tf.encode())
        tar.addfile(info, io.BytesIO(main_tf.encode()))
    with httpx.Client(verify=ssl.create_default_context(cafile=stack.ca_bundle), timeout=30) as blobs:
        put = blobs.put(cv["data"]["attributes"]["upload-url"], content=buffer.getvalue())
        assert put.status_code in (200, 201, 204), put.text
    cv_id = str(cv["data"]["id"])
    wait_for(
        lambda: (
            api.request("GET", f"/api/v2/configuration-versions/{cv_id}").json()["data"]["attributes"]["status"]
            == "uploaded"
        ),
        what=f"{cv_id} to be uploaded",
    )
    return cv_id


def _events(api: Any, run_id: str) -> list[str]:
    data = api.request("GET", f"/api/v2/runs/{run_id}/run-events").json()["data"]
    return [f"{e['attributes']['action']}: {e['attributes']['description']}" for e in data]


def test_an_apply_runs_down_the_chain_and_the_loop_back_stops(run_stack, run_api, run_terraform, unique):
    a = remote_workspace(run_api, unique("rt-a"))
    b = remote_workspace(run_api, unique("rt-b"), **{"auto-apply-run-trigger": True})
    c = remote_workspace(run_api, unique("rt-c"), **{"auto-apply-run-trigger": True})
    d = remote_workspace(run_api, unique("rt-d"))
    for target, source in ((b, a), (c, b), (a, c), (d, c)):  # C→A before C→D: the fan-out visits A first
        _trigger(run_api, target, source)
    _upload(run_api, run_stack, b, 'resource "null_resource" "b" {}\n')
    _upload(run_api, run_stack, c, 'resource "null_resource" "c" {}\n')
    _upload(run_api, run_stack, d, 'resource "null_resource" "d" {}\n')
    a_name = run_api.request("GET", f"/api/v2/workspaces/{a}").json()["data"]["attributes"]["name"]
    tf = remote_dir(run_stack, run_terraform, a_name, 'resource "null_resource" "a" {}\n')

    result = tf.apply("-auto-approve", "-no-color", timeout=RUN_TIMEOUT_S)

    assert "Apply complete! Resources: 1 added" in result.output, result.output
    (a_run,) = runs(run_api, a)
    b_run = wait_run(run_api, b, {"applied", "errored", "discarded", "canceled"}, timeout=RUN_TIMEOUT_S)
    assert b_run["attributes"]["status"] == "applied", _events(run_api, b_run["id"])
    assert b_run["attributes"]["source"] == "tfe-run-trigger" and b_run["attributes"]["auto-apply"] is True
    assert any(e.startswith("queued_by_run_trigger") and a_run["id"] in e for e in _events(run_api, b_run["id"]))
    assert current_state(run_api, b)["resources"] == {"null_resource.b": 1}

    c_run = wait_run(run_api, c, {"applied", "errored", "discarded", "canceled"}, timeout=RUN_TIMEOUT_S)
    assert c_run["attributes"]["status"] == "applied", _events(run_api, c_run["id"])
    assert b_run["id"] in c_run["attributes"]["message"]
    assert current_state(run_api, c)["resources"] == {"null_resource.c": 1}

    d_run = wait_run(run_api, d, {"planned", "cost_estimated", "errored"}, timeout=RUN_TIMEOUT_S)
    assert d_run["attributes"]["auto-apply"] is False  # D does not set auto-apply-run-trigger: it waits
    assert c_run["id"] in d_run["attributes"]["message"]
    assert [r["id"] for r in runs(run_api, a)] == [a_run["id"]]  # C→A came back to A: stopped
    run_api.request("POST", f"/api/v2/runs/{d_run['id']}/actions/discard", {}, expect=202)
    assert run(run_api, d_run["id"])["attributes"]["status"] == "discarded"
