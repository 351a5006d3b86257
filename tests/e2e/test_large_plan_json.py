"""A plan JSON above TERRACE_PLAN_JSON_REDIRECT_BYTES (1 MB): json-output-redacted is not answered through the API
(a Lambda answer holds 6 MB) but with a 307 to a presigned URL of the redacted copy stored when the plan finished;
an HTTP client (httpx, as terraform's cloud backend reads it with Go's client) follows it and gets the document,
sensitive values nulled. Terraform 1.0.3 (the test client) renders its own plan and reads no plan JSON."""

from __future__ import annotations

import uuid

import pytest
from e2e_runs import RUN_TIMEOUT_S, remote_dir, remote_workspace, runs

pytestmark = pytest.mark.e2e

CONFIG = """
variable "db_password" {}

resource "null_resource" "big" {
  triggers = {
    big      = format("%01200000d", 7)
    password = var.db_password
  }
}
"""


def test_a_large_plans_redacted_json_is_a_redirect_an_http_client_follows(run_stack, run_api, run_terraform, unique):
    name = unique("bigplan")
    ws_id = remote_workspace(run_api, name)
    secret = f"tfsecret-{uuid.uuid4().hex}"
    body = {"data": {"type": "vars", "attributes": {
        "key": "db_password", "value": secret, "category": "terraform", "sensitive": True}}}  # fmt: skip
    run_api.request("POST", f"/api/v2/workspaces/{ws_id}/vars", body, expect=201)
    tf = remote_dir(run_stack, run_terraform, name, CONFIG)

    planned = tf.run("plan", "-no-color", timeout=RUN_TIMEOUT_S)  # a speculative plan

    assert "Plan: 1 to add" in planned.output
    (run,) = runs(run_api, ws_id)
    plan_id = run["relationships"]["plan"]["data"]["id"]
    path = f"/api/v2/plans/{plan_id}/json-output-redacted"
    answer = run_api.http.get(path, follow_redirects=False)
    assert answer.status_code == 307, answer.text
    assert "/api/v2/" not in answer.headers["location"]
    followed = run_api.http.get(path, follow_redirects=True)
    assert followed.status_code == 200 and len(followed.content) > 1024 * 1024
    document = followed.json()
    after = document["resource_changes"][0]["change"]["after"]["triggers"]
    assert after["big"] == "0" * 1199999 + "7"
    assert document["variables"]["db_password"] == {"value": None}
    assert secret.encode() not in followed.content
