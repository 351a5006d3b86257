"""Prepares a fresh conformance stack as an operator prepares a deployment for Hold Your Own Key before go-tfe's
HYOK tests (ENABLE_HYOK_INTEGRATION_TESTS=1): an organization whose HYOK configuration reaches a real key of the
stack's key file (TERRACE_HYOK_KEY_FILE, made by run.sh) through an AWS OIDC configuration and an agent pool, tested
once, so that a customer key version and an encrypted data key exist. Prints the variables go-tfe's tests read
(HYOK_ORGANIZATION_NAME, HYOK_POOL_ID, HYOK_CUSTOMER_KEY_VERSION_ID, HYOK_ENCRYPTED_DATA_KEY_ID) as `export` lines.

Usage: hyok_prepare.py DEV_JSON KEY_NAME
"""

from __future__ import annotations

import json
import ssl
import sys
import urllib.request
from typing import Any

ORGANIZATION = "hyok-conformance"


def main(dev_json: str, key_name: str) -> None:
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
    print(f"export HYOK_ORGANIZATION_NAME={ORGANIZATION}")
    print(f"export HYOK_POOL_ID={pool['data']['id']}")
    print(f"export HYOK_CUSTOMER_KEY_VERSION_ID={version['id']}")
    print(f"export HYOK_ENCRYPTED_DATA_KEY_ID={data_key}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
