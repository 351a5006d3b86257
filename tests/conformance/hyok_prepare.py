"""Prepares a fresh conformance stack as an operator prepares a deployment for Hold Your Own Key before go-tfe's
HYOK tests (ENABLE_HYOK_INTEGRATION_TESTS=1): an organization whose HYOK configuration reaches a real key of the
stack's key file (TERRACE_HYOK_KEY_FILE, made by run.sh) through an AWS OIDC configuration and an agent pool, tested
once, so that a customer key version and an encrypted data key exist. Prints the variables go-tfe's tests read
(HYOK_ORGANIZATION_NAME, HYOK_POOL_ID, HYOK_CUSTOMER_KEY_VERSION_ID, HYOK_ENCRYPTED_DATA_KEY_ID) as `export` lines,
a HYOK workspace (HYOK_WORKSPACE_NAME) with a state version written as an agent writes it
(HYOK_STATE_VERSION_ID), and a plan of it an agent sealed, its data key recorded (HYOK_PLAN_ID).

Usage: hyok_prepare.py DEV_JSON KEY_NAME KEY_FILE
"""

from __future__ import annotations

import base64
import hashlib
import json
import ssl
import sys
import urllib.request
from typing import Any

ORGANIZATION = "hyok-conformance"
# the lineage go-tfe's HYOK state upload declares (serial 1): the prepared state is serial 0 of it
LINEAGE = "741c4949-60b9-5bb1-5bf8-b14f4bb14af3"


def _encrypted_state(api: Any, pool_id: str, key_file: str, key_name: str) -> str:
    """A HYOK workspace's state version as an agent writes it (`runner/hyok_state.py`): the state sealed under a data
    key the key file's key wraps, its sanitized copy and the wrapped key; go-tfe reads its download URLs."""
    from terrace.adapters.file_key_wrapper import FileKeyWrapper
    from terrace.adapters.key_wrapper import CustomerKey
    from terrace.domain.sanitized_state import sanitize
    from terrace.runner import hyok_envelope as envelope

    ws = api("POST", f"/organizations/{ORGANIZATION}/workspaces",
             {"data": {"type": "workspaces", "attributes": {"name": "hyok-state", "hyok-enabled": True}}})  # fmt: skip
    ws_id = ws["data"]["id"]
    assert ws["data"]["relationships"]["agent-pool"]["data"]["id"] == pool_id
    api("POST", f"/workspaces/{ws_id}/actions/lock", {})
    state = {
        "version": 4,
        "terraform_version": "1.11.0",
        "serial": 0,
        "lineage": LINEAGE,
        "outputs": {"secret": {"value": "s3cret", "type": "string", "sensitive": True}},
        "resources": [],
    }
    context = {"workspace": ws_id, "purpose": "state"}
    data_key = envelope.new_data_key(FileKeyWrapper(key_file), CustomerKey(key_name, "aws"), context)
    sealed = envelope.seal(data_key.plaintext, json.dumps(state).encode(), context)
    attrs = {"serial": 0, "lineage": LINEAGE, "md5": hashlib.md5(sealed).hexdigest(),
             "state": base64.b64encode(sealed).decode(),
             "sanitized-state": base64.b64encode(json.dumps(sanitize(state)).encode()).decode(),
             "hyok-encrypted-dek": data_key.wrapped, "hyok-key-version": data_key.key_version,
             "hyok-context": context}  # fmt: skip
    sv = api("POST", f"/workspaces/{ws_id}/state-versions", {"data": {"type": "state-versions", "attributes": attrs}})
    api("POST", f"/workspaces/{ws_id}/actions/unlock", {})
    return str(sv["data"]["id"])


def _sealed_plan(api: Any, runner: Any, pool_id: str, ws_id: str, key_file: str, key_name: str) -> str:
    """A plan of the HYOK workspace as an agent of its pool plans it: the agent registers, claims the plan job,
    seals its plan under a data key the key file's key wraps and records that key (`runner/hyok_state.py`); the run
    then finishes with no changes (nothing stays queued on the workspace)."""
    import io
    import tarfile

    from terrace.adapters.file_key_wrapper import FileKeyWrapper
    from terrace.adapters.key_wrapper import CustomerKey
    from terrace.runner import hyok_envelope as envelope

    body = {"data": {"type": "authentication-tokens", "attributes": {"description": "conformance"}}}
    token = api("POST", f"/agent-pools/{pool_id}/authentication-tokens", body)["data"]["attributes"]["token"]
    agent = runner("POST", "/api/agent/register", {"name": "conformance"}, token)["agent_id"]
    cv = api("POST", f"/workspaces/{ws_id}/configuration-versions",
             {"data": {"type": "configuration-versions", "attributes": {"auto-queue-runs": False}}})  # fmt: skip
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w:gz") as tar:
        info = tarfile.TarInfo("main.tf")
        info.size = len(b'output "a" { value = 1 }\n')
        tar.addfile(info, io.BytesIO(b'output "a" { value = 1 }\n'))
    runner("PUT", cv["data"]["attributes"]["upload-url"], archive.getvalue(), None)
    cv_ref = {"data": {"type": "configuration-versions", "id": cv["data"]["id"]}}
    relationships = {"workspace": {"data": {"type": "workspaces", "id": ws_id}}, "configuration-version": cv_ref}
    api("POST", "/runs", {"data": {"type": "runs", "attributes": {}, "relationships": relationships}})
    spec = runner("POST", "/api/runner/jobs/next", {"runner_id": agent}, token)
    job = f"/api/runner/jobs/{spec['job_id']}"
    key = runner("POST", f"{job}/hyok-key", {"runner_id": agent}, token)
    context = {**key["context"], "purpose": "plan", "run": spec["run_id"]}
    data_key = envelope.new_data_key(FileKeyWrapper(key_file), CustomerKey(key_name, "aws"), context)
    record = {"encrypted_dek": data_key.wrapped, "key_version": data_key.key_version, "context": context}
    runner("POST", f"{job}/hyok-plan-key", {"runner_id": agent, **record}, token)
    runner("POST", f"{job}/finish", {"runner_id": agent, "status": "finished", "has_changes": False}, token)
    return str(api("GET", f"/runs/{spec['run_id']}")["data"]["relationships"]["plan"]["data"]["id"])


def main(dev_json: str, key_name: str, key_file: str) -> None:
    dev = json.load(open(dev_json))
    context = ssl.create_default_context(cafile=dev["ca_bundle"])

    def api(method: str, path: str, body: Any = None) -> Any:
        request = urllib.request.Request(
            f"{dev['url'].rstrip('/')}/api/v2{path}",
            data=json.dumps(body).encode() if body is not None else None,
            method=method,
            headers={"Authorization": f"Bearer {dev['token']}", "Content-Type": "application/vnd.api+json"},
        )
        with urllib.request.urlopen(request, context=context, timeout=30) as answer:
            raw = answer.read()
        return json.loads(raw) if raw else None

    org = {"data": {"type": "organizations", "attributes": {"name": ORGANIZATION, "email": "hyok@example.com"}}}
    api("POST", "/organizations", org)
    role = {"role-arn": "arn:aws:iam::123456789012:role/hyok"}
    oidc = api("POST", f"/organizations/{ORGANIZATION}/oidc-configurations",
               {"data": {"type": "aws-oidc-configurations", "attributes": role}})  # fmt: skip
    pool = api("POST", f"/organizations/{ORGANIZATION}/agent-pools",
               {"data": {"type": "agent-pools", "attributes": {"name": "hyok-agents"}}})  # fmt: skip
    hyok = api("POST", f"/organizations/{ORGANIZATION}/hyok-configurations", {"data": {
        "type": "hyok-configurations",
        "attributes": {"name": "conformance", "kek-id": key_name, "kms-options": {"key-region": "us-east-1"}},
        "relationships": {
            "oidc-configuration": {"data": {"type": "aws-oidc-configurations", "id": oidc["data"]["id"]}},
            "agent-pool": {"data": {"type": "agent-pools", "id": pool["data"]["id"]}},
        }}})  # fmt: skip
    api("POST", f"/hyok-configurations/{hyok['data']['id']}/actions/test")
    versions = api("GET", f"/hyok-configurations/{hyok['data']['id']}/hyok-customer-key-versions")["data"]
    version = api("GET", f"/hyok-customer-key-versions/{versions[0]['id']}")["data"]
    data_key = version["relationships"]["hyok-encrypted-data-keys"]["data"][0]["id"]

    def runner(method: str, path: str, body: Any, token: str | None) -> Any:
        """The agent's side (`/api/agent`, `/api/runner`) and upload URLs: JSON, or raw bytes for a PUT."""
        url = path if path.startswith("https://") else f"{dev['url'].rstrip('/')}{path}"
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        headers = {"Content-Type": "application/octet-stream" if isinstance(body, bytes) else "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        request = urllib.request.Request(url, data=raw, method=method, headers=headers)
        with urllib.request.urlopen(request, context=context, timeout=30) as answer:
            text = answer.read()
        return json.loads(text) if text else None

    state_version = _encrypted_state(api, pool["data"]["id"], key_file, key_name)
    ws_id = api("GET", f"/organizations/{ORGANIZATION}/workspaces/hyok-state")["data"]["id"]
    plan_id = _sealed_plan(api, runner, pool["data"]["id"], ws_id, key_file, key_name)
    print(f"export HYOK_ORGANIZATION_NAME={ORGANIZATION}")
    print(f"export HYOK_STATE_VERSION_ID={state_version}")
    print(f"export HYOK_PLAN_ID={plan_id}")
    print("export HYOK_WORKSPACE_NAME=hyok-state")
    print(f"export HYOK_POOL_ID={pool['data']['id']}")
    print(f"export HYOK_CUSTOMER_KEY_VERSION_ID={version['id']}")
    print(f"export HYOK_ENCRYPTED_DATA_KEY_ID={data_key}")


if __name__ == "__main__":
    main(*sys.argv[1:4])
