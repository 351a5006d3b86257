"""On moto, as on AWS: the workload identity issuer keeps its private keys in SSM SecureString parameters under the
deployment's path, never in the table; the first signature makes the first key, the JWKS (served by the app) lists
it, and a rotation made by another process (the operator's `terrace workload-identity rotate`) publishes a second
key that every process sees."""

from __future__ import annotations

import uuid

import boto3
import jwt
from fastapi.testclient import TestClient
from terrace.bootstrap import build_aws
from terrace.config import Settings
from terrace.web.app import create_app
from terrace.wiring.local_resources import create_resources


def test_keys_live_in_ssm_secure_strings_and_rotate_across_processes(endpoint: str) -> None:
    resources = create_resources(endpoint, f"w{uuid.uuid4().hex[:8]}")
    path = f"/terrace/{uuid.uuid4().hex[:8]}/workload-identity"
    settings = Settings(**resources.settings_fields(), aws_endpoint_url=endpoint, url_signing_secret="s",
                        public_url="https://t.test", workload_identity_keys_path=path)  # fmt: skip
    api = build_aws(settings)
    client = TestClient(create_app(api))
    assert client.get("/.well-known/jwks").json() == {"keys": []}
    token = api.workload_issuer.sign({"iss": "https://t.test", "aud": "aws.workload.identity", "sub": "s"})

    ssm = boto3.client("ssm", endpoint_url=endpoint, region_name="us-east-1")
    [parameter] = ssm.get_parameters_by_path(Path=path)["Parameters"]
    assert (
        parameter["Type"] == "SecureString" and parameter["Name"] == f"{path}/{jwt.get_unverified_header(token)['kid']}"
    )
    items = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1").scan(
        TableName=settings.table_name
    )["Items"]
    assert "PRIVATE KEY" not in str(items)
    [published] = jwt.PyJWKSet.from_dict(client.get("/.well-known/jwks").json()).keys
    assert jwt.decode(token, published.key, algorithms=["RS256"], audience="aws.workload.identity")["sub"] == "s"

    operator = build_aws(settings)  # another process: the CLI
    fresh = operator.workload_issuer.rotate()
    later = TestClient(create_app(build_aws(settings)))  # a process started after the rotation (caches are per process)
    assert {k["kid"] for k in later.get("/.well-known/jwks").json()["keys"]} == {published.key_id, fresh.kid}
