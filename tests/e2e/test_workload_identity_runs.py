"""Dynamic provider credentials through a real remote run (Terraform 1.0.3, the embedded server's runners): a
workspace with `TFC_AWS_PROVIDER_AUTH` and a role ARN, and no AWS key anywhere, runs a local-exec that asks the
AWS SDK (boto3's own web-identity chain: AWS_ROLE_ARN + AWS_WEB_IDENTITY_TOKEN_FILE) who it is; the SDK calls
`AssumeRoleWithWebIdentity` on moto and then `GetCallerIdentity` with the role's credentials. moto does not check
the token, so the test also reads the token the job was given (printed reversed: the log masks it as is) and
verifies it with PyJWT against the JWKS fetched over HTTPS from the running server: signature, issuer, audience,
the workspace's subject for the apply phase, expiry."""

from __future__ import annotations

import os
import re
import ssl
import sys
from collections.abc import Iterator
from pathlib import Path

import boto3
import jwt
import pytest
from e2e_runs import RUN_TIMEOUT_S, remote_dir, remote_workspace, runs, wait_final

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from aws import moto_server  # noqa: E402

pytestmark = pytest.mark.e2e
# the job's uid cannot run a python under /root (pyenv): a system python with the virtualenv's packages
PYTHON = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
SITE_PACKAGES = str(Path(boto3.__file__).resolve().parents[1])
ROLE = "arn:aws:iam::123456789012:role/terrace-deployer"
WHOAMI = (
    "import boto3, os, stat; "
    "path = os.environ['AWS_WEB_IDENTITY_TOKEN_FILE']; info = os.stat(path); "
    "print('mode', oct(stat.S_IMODE(info.st_mode)), 'owner', info.st_uid, "
    "'static-keys', 'AWS_ACCESS_KEY_ID' in os.environ); "
    "print('token-reversed', open(path).read()[::-1]); "
    "print('token-as-is', open(path).read()); "
    "print('caller', boto3.client('sts').get_caller_identity()['Arn'])"
)


@pytest.fixture(scope="module")
def sts() -> Iterator[str]:
    with moto_server() as url:
        yield url


def config(python: str) -> str:
    return f"""
resource "null_resource" "whoami" {{
  provisioner "local-exec" {{
    command = "{python} -c \\"{WHOAMI}\\""
  }}
}}
"""


def test_a_remote_run_assumes_a_role_with_its_workload_identity_token(run_stack, run_api, run_terraform, unique, sts):
    name = unique("wif")
    ws_id = remote_workspace(run_api, name)
    for key, value in {
        "TFC_AWS_PROVIDER_AUTH": "true",
        "TFC_AWS_RUN_ROLE_ARN": ROLE,
        "AWS_ENDPOINT_URL_STS": sts,  # moto plays STS
        "AWS_DEFAULT_REGION": "us-east-1",
        "PYTHONPATH": SITE_PACKAGES,  # boto3, for a system python the job's uid may run
    }.items():
        body = {"data": {"type": "vars", "attributes": {"key": key, "value": value, "category": "env"}}}
        run_api.request("POST", f"/api/v2/workspaces/{ws_id}/vars", body, expect=201)
    tf = remote_dir(run_stack, run_terraform, name, config(PYTHON))

    result = tf.apply(timeout=RUN_TIMEOUT_S)

    assert "Apply complete! Resources: 1 added" in result.output, result.output
    (run,) = runs(run_api, ws_id)
    wait_final(run_api, run["id"])
    output = result.output
    caller = re.search(r"caller (\S+)", output)
    assert caller, output
    assert caller.group(1) == f"arn:aws:sts::123456789012:assumed-role/terrace-deployer/terrace-{run['id']}"
    # the runner's file (its owner is the runner, as this test's process), which the job's uid reads
    assert f"mode 0o640 owner {os.geteuid()} static-keys False" in output, output
    assert "token-as-is ***" in output  # masked in the log like every sensitive value
    token = re.search(r"token-reversed (\S+)", output).group(1)[::-1]  # type: ignore[union-attr]

    context = ssl.create_default_context(cafile=run_stack.ca_bundle)
    discovery = run_api.http.get("/.well-known/openid-configuration").json()
    issuer = run_stack.url.rstrip("/")
    assert discovery["issuer"] == issuer
    signing_key = jwt.PyJWKClient(discovery["jwks_uri"], ssl_context=context).get_signing_key_from_jwt(token)
    claims = jwt.decode(token, signing_key.key, algorithms=["RS256"], audience="aws.workload.identity", issuer=issuer,
                        options={"require": ["exp", "iat", "nbf", "sub"]})  # fmt: skip
    workspace = f"organization:{run_stack.organization}:project:Default Project:workspace:{name}"
    assert claims["sub"] == f"{workspace}:run_phase:apply" and claims["terraform_full_workspace"] == workspace
    assert claims["terraform_workspace_id"] == ws_id and claims["terraform_run_id"] == run["id"]
    assert claims["terraform_run_phase"] == "apply" and claims["exp"] > claims["iat"]
    with pytest.raises(jwt.InvalidAudienceError):
        jwt.decode(token, signing_key.key, algorithms=["RS256"], audience="sts.amazonaws.com", issuer=issuer)
