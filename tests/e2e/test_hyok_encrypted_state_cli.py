"""Hold Your Own Key through a real client and a real agent: terraform 1.0.3 applies a configuration with a
sensitive output to a HYOK workspace; the run goes to `terrace agent`, which reaches the customer's key (the key file
on its host), seals the new state under a fresh data key and uploads it with a sanitized copy. What the server
stores is ciphertext (the sensitive value is in neither download it serves but the sanitized copy's redaction), the
wrapped data key is recorded under the customer key version, the JSON plan keeps no value, and a second plan on the
agent decrypts the state back (no changes). The sealed plan's wrapped data key is recorded on its plan (the applying
agent opened it with the key the server handed back). What a revoked key version does to a run, in process:
tests/unit/test_hyok_agent.py and tests/unit/test_hyok_data_keys.py."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import BACKEND
from e2e_runs import RUN_TIMEOUT_S, remote_dir, runs
from terrace.domain.sanitized_state import ENVELOPE_MAGIC, REDACTED
from terrace.local.workers import runner_env

pytestmark = pytest.mark.e2e

TERRACE = Path(sys.executable).parent / "terrace"
SECRET = "hyok-e2e-s3cret"
CONFIG = f"""
resource "null_resource" "a" {{}}

output "secret" {{
  value     = "{SECRET}-${{null_resource.a.id}}"
  sensitive = true
}}

output "id" {{
  value = null_resource.a.id
}}
"""


@pytest.fixture
def hyok_agent(run_local_stack: Any) -> Iterator[Any]:
    """hyok_agent(token, name) -> a `terrace agent` holding the stack's key file (stopped at the end)."""
    started: list[subprocess.Popen[str]] = []

    def start(token: str, name: str) -> subprocess.Popen[str]:
        stack = run_local_stack
        env = runner_env(stack.settings.public_url, stack.info.ca_bundle, stack.state_dir)
        del env["TERRACE_API_URL"], env["TERRACE_RUNNER_IDLE_EXIT_S"], env["TERRACE_RUNNER_WAIT_S"]
        env |= {
            "TFC_AGENT_TOKEN": token,
            "TFC_ADDRESS": stack.settings.public_url,
            "TFC_AGENT_NAME": name,
            "TERRACE_WORK_DIR": str(stack.state_dir / f"agent-{name}-work"),
            "TERRACE_HYOK_KEY_FILE": str(stack.state_dir / "hyok-keys.json"),  # the customer's key, on this host
            "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        }
        process = subprocess.Popen([str(TERRACE), "agent"], env=env, text=True, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT)  # fmt: skip
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait()
        if process.stdout is not None:
            process.stdout.close()


def _hyok_pool(api: Any, org: str, unique: Any, key_file: Path) -> tuple[str, str]:
    """An agent pool, an available primary HYOK configuration on the key file's key: (its id, the pool's token)."""
    if not key_file.exists():
        key_file.write_text(json.dumps({"keys": {"team-key": [base64.b64encode(os.urandom(32)).decode()]}}))
    body = {"data": {"type": "agent-pools", "attributes": {"name": unique("hyok-pool")}}}
    pool = api.request("POST", f"/api/v2/organizations/{org}/agent-pools", body, expect=201).json()["data"]
    token_body = {"data": {"type": "authentication-tokens", "attributes": {"description": "hyok"}}}
    token = api.request("POST", f"/api/v2/agent-pools/{pool['id']}/authentication-tokens", token_body, expect=201)
    oidc_body = {"data": {"type": "aws-oidc-configurations",
                          "attributes": {"role-arn": "arn:aws:iam::123456789012:role/hyok"}}}  # fmt: skip
    oidc = api.request("POST", f"/api/v2/organizations/{org}/oidc-configurations", oidc_body, expect=201)
    rels = {"oidc-configuration": {"data": {"type": "aws-oidc-configurations", "id": oidc.json()["data"]["id"]}},
            "agent-pool": {"data": {"type": "agent-pools", "id": pool["id"]}}}  # fmt: skip
    attrs = {"name": unique("hyok"), "kek-id": "team-key", "kms-options": {"key-region": "us-east-1"}}
    hyok_body = {"data": {"type": "hyok-configurations", "attributes": attrs, "relationships": rels}}
    hyok = api.request("POST", f"/api/v2/organizations/{org}/hyok-configurations", hyok_body, expect=201)
    hyok_id = hyok.json()["data"]["id"]
    api.request("POST", f"/api/v2/hyok-configurations/{hyok_id}/actions/test", expect=200)
    patch = {"data": {"type": "hyok-configurations", "attributes": {"primary": True}}}
    api.request("PATCH", f"/api/v2/hyok-configurations/{hyok_id}", patch, expect=200)
    return hyok_id, str(token.json()["data"]["attributes"]["token"])


@pytest.mark.skipif(BACKEND == "moto", reason="the key file stands in for the customer's key on the embedded stack")
def test_a_hyok_workspace_state_is_sealed_on_the_agent(
    run_local_stack, run_stack, run_api, run_terraform, unique, hyok_agent
):
    org = run_stack.organization
    hyok_id, token = _hyok_pool(run_api, org, unique, run_local_stack.state_dir / "hyok-keys.json")
    name = unique("hyokws")
    ws = run_api.create_workspace(name, **{"hyok-enabled": True, "terraform-version": "1.0.3"})
    assert ws["attributes"]["hyok-enabled"] is True and ws["attributes"]["execution-mode"] == "agent"
    agent = hyok_agent(token, "hyok-host")
    tf = remote_dir(run_stack, run_terraform, name, CONFIG)
    applied = tf.apply(timeout=RUN_TIMEOUT_S)
    assert "Apply complete! Resources: 1 added" in applied.stdout

    sv = run_api.request("GET", f"/api/v2/workspaces/{ws['id']}/current-state-version").json()["data"]
    data_key = sv["relationships"]["hyok-encrypted-data-key"]["data"]["id"]
    assert data_key.startswith("dek-")
    sealed = run_api.http.get(sv["attributes"]["hosted-state-download-url"], follow_redirects=True).content
    assert sealed.startswith(ENVELOPE_MAGIC) and SECRET.encode() not in sealed
    sanitized = run_api.http.get(sv["attributes"]["sanitized-state-download-url"], follow_redirects=True).json()
    assert sanitized["outputs"]["secret"]["value"] == REDACTED
    assert sanitized["outputs"]["id"]["value"].isdigit() and SECRET not in json.dumps(sanitized)
    outputs = run_api.request("GET", f"/api/v2/state-versions/{sv['id']}/outputs").json()["data"]
    assert SECRET not in json.dumps(outputs)

    (first,) = runs(run_api, ws["id"])
    plan_id = first["relationships"]["plan"]["data"]["id"]
    plan_json = run_api.http.get(f"/api/v2/plans/{plan_id}/json-output", follow_redirects=True).json()
    assert plan_json["hyok_sanitized"] is True and SECRET not in json.dumps(plan_json)
    assert [c["address"] for c in plan_json["resource_changes"]] == ["null_resource.a"]
    plan = run_api.request("GET", f"/api/v2/plans/{plan_id}").json()["data"]  # its sealed plan's key, recorded
    assert plan["relationships"]["hyok-encrypted-data-key"]["data"]["id"].startswith("dek-")
    sanitized_plan = run_api.http.get(plan["links"]["sanitized-plan"], follow_redirects=True).json()
    assert sanitized_plan == plan_json

    planned = tf.run("plan", "-input=false", "-no-color", timeout=RUN_TIMEOUT_S)
    assert "No changes" in planned.stdout, planned  # the agent decrypted the state back

    versions = run_api.request("GET", f"/api/v2/hyok-configurations/{hyok_id}/hyok-customer-key-versions")
    # the one version of the key file's key wrapped the key test's data key and the agent's (the queued test and the
    # one asked for may each record it); revoking it: tests/unit/test_hyok_agent.py
    listed = {(v["attributes"]["key-version"], v["attributes"]["status"]) for v in versions.json()["data"]}
    assert listed == {("team-key/1", "available")}
    agent.terminate()
    agent.wait(timeout=60)
