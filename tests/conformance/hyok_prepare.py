"""Prepares a fresh conformance stack as an operator prepares a deployment for Hold Your Own Key before go-tfe's
HYOK tests (ENABLE_HYOK_INTEGRATION_TESTS=1): an organization whose HYOK configuration reaches a real key of the
stack's key file (TERRACE_HYOK_KEY_FILE, made by run.sh) through an AWS OIDC configuration and an agent pool, tested
once, so that a customer key version and an encrypted data key exist. Prints the variables go-tfe's tests read
(HYOK_ORGANIZATION_NAME, HYOK_POOL_ID, HYOK_CUSTOMER_KEY_VERSION_ID, HYOK_ENCRYPTED_DATA_KEY_ID) as `export` lines,
and a HYOK workspace (HYOK_WORKSPACE_NAME) with a state version written as an agent writes it
(HYOK_STATE_VERSION_ID).

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
        "serial": 1,
        "lineage": "hyok-conformance",
        "outputs": {"secret": {"value": "s3cret", "type": "string", "sensitive": True}},
        "resources": [],
    }
    context = {"workspace": ws_id, "purpose": "state"}
    data_key = envelope.new_data_key(FileKeyWrapper(key_file), CustomerKey(key_name, "aws"), context)
    sealed = envelope.seal(data_key.plaintext, json.dumps(state).encode(), context)
    attrs = {"serial": 1, "lineage": "hyok-conformance", "md5": hashlib.md5(sealed).hexdigest(),
             "state": base64.b64encode(sealed).decode(),
             "sanitized-state": base64.b64encode(json.dumps(sanitize(state)).encode()).decode(),
             "hyok-encrypted-dek": data_key.wrapped, "hyok-key-version": data_key.key_version,
             "hyok-context": context}  # fmt: skip
    sv = api("POST", f"/workspaces/{ws_id}/state-versions", {"data": {"type": "state-versions", "attributes": attrs}})
    api("POST", f"/workspaces/{ws_id}/actions/unlock", {})
    return str(sv["data"]["id"])


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
    state_version = _encrypted_state(api, pool["data"]["id"], key_file, key_name)
    print(f"export HYOK_ORGANIZATION_NAME={ORGANIZATION}")
    print(f"export HYOK_STATE_VERSION_ID={state_version}")
    print("export HYOK_WORKSPACE_NAME=hyok-state")
    print(f"export HYOK_POOL_ID={pool['data']['id']}")
    print(f"export HYOK_CUSTOMER_KEY_VERSION_ID={version['id']}")
    print(f"export HYOK_ENCRYPTED_DATA_KEY_ID={data_key}")


if __name__ == "__main__":
    main(*sys.argv[1:4])
