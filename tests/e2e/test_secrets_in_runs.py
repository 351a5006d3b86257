"""A run whose configuration echoes a sensitive env variable and a sensitive terraform variable (local-exec
`echo`, a trigger, an output) through Terraform 1.0.3: no sensitive value reaches terraform's own output,
the plan and apply logs read through the API's log-read URLs, the archived log blobs, the stored plan
JSON, json-output or json-output-redacted."""

from __future__ import annotations

import ssl
import uuid

import httpx
import pytest
from e2e_runs import RUN_TIMEOUT_S, remote_dir, remote_workspace, runs, wait_final
from terrace.services.runs.logs import archive_key

pytestmark = pytest.mark.e2e

CONFIG = """
variable "db_password" {}

resource "null_resource" "echo" {
  triggers = {
    password = var.db_password
  }
  provisioner "local-exec" {
    command = "echo env=$API_TOKEN tf=${var.db_password}"
  }
}

output "password" {
  value = var.db_password
}
"""


def _sensitive_variable(api, ws_id: str, key: str, value: str, category: str) -> None:  # type: ignore[no-untyped-def]
    body = {
        "data": {"type": "vars", "attributes": {"key": key, "value": value, "category": category, "sensitive": True}}
    }
    api.request("POST", f"/api/v2/workspaces/{ws_id}/vars", body, expect=201)


def _log(api, path: str) -> bytes:  # type: ignore[no-untyped-def]
    url = api.request("GET", path).json()["data"]["attributes"]["log-read-url"]
    response = api.http.get(url, params={"limit": 1024 * 1024, "offset": 0}, headers={"Authorization": ""})
    assert response.status_code == 200, response.text
    return response.content


def test_sensitive_values_appear_in_no_log_blob_or_plan_json(
    run_local_stack, run_stack, run_api, run_terraform, unique
):
    name = unique("masked")
    ws_id = remote_workspace(run_api, name)
    env_secret, tf_secret = f"envsecret-{uuid.uuid4().hex}", f"tfsecret-{uuid.uuid4().hex}"
    _sensitive_variable(run_api, ws_id, "API_TOKEN", env_secret, "env")
    _sensitive_variable(run_api, ws_id, "db_password", tf_secret, "terraform")
    tf = remote_dir(run_stack, run_terraform, name, CONFIG)

    result = tf.apply(timeout=RUN_TIMEOUT_S)

    assert "Apply complete! Resources: 1 added" in result.output
    assert "env=*** tf=***" in result.output  # the provisioner's echo, streamed through the log-read URL
    (run,) = runs(run_api, ws_id)
    wait_final(run_api, run["id"])
    plan_id = run["relationships"]["plan"]["data"]["id"]
    apply_id = run["relationships"]["apply"]["data"]["id"]
    plan_log, apply_log = _log(run_api, f"/api/v2/plans/{plan_id}"), _log(run_api, f"/api/v2/applies/{apply_id}")
    assert b"null_resource.echo will be created" in plan_log and b"Apply complete!" in apply_log
    blobs = run_local_stack.container.blobs
    archived = blobs.get(archive_key(plan_id)) + blobs.get(archive_key(apply_id))
    stored_plan = blobs.get(f"plans/{run['id']}/plan.json")
    json_output = run_api.http.get(f"/api/v2/plans/{plan_id}/json-output", follow_redirects=True)
    assert json_output.status_code == 200 and b"null_resource.echo" in json_output.content
    redacted = run_api.request("GET", f"/api/v2/plans/{plan_id}/json-output-redacted")
    assert redacted.json()["variables"]["db_password"] == {"value": None}
    for where, data in {
        "terraform's output": result.output.encode(),
        "the plan log": plan_log,
        "the apply log": apply_log,
        "the archived logs": archived,
        "the stored plan JSON": stored_plan,
        "json-output": json_output.content,
        "json-output-redacted": redacted.content,
    }.items():
        for secret in (env_secret, tf_secret):
            assert secret.encode() not in data, f"{secret} in {where}"
            assert secret[-12:].encode() not in data, f"part of {secret} in {where}"


def test_log_read_urls_refuse_other_phases_and_bad_signatures(run_stack, run_api, run_terraform, unique):
    name = unique("links")
    ws_id = remote_workspace(run_api, name)
    tf = remote_dir(run_stack, run_terraform, name, 'resource "null_resource" "a" {}\n')
    tf.apply(timeout=RUN_TIMEOUT_S)
    (run,) = runs(run_api, ws_id)
    plan_id = run["relationships"]["plan"]["data"]["id"]
    apply_id = run["relationships"]["apply"]["data"]["id"]
    url = run_api.request("GET", f"/api/v2/plans/{plan_id}").json()["data"]["attributes"]["log-read-url"]
    with httpx.Client(verify=ssl.create_default_context(cafile=run_stack.ca_bundle), timeout=30) as anonymous:
        assert anonymous.get(url).status_code == 200
        assert anonymous.get(url.replace(plan_id, apply_id)).status_code == 404
        assert anonymous.get(url.rsplit("/", 1)[0] + "/%C3%A9%C3%A9").status_code == 404
