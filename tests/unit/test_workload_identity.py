"""Workload identity (dynamic provider credentials): a claimed job carries HCP-shaped tokens, verified here with
PyJWT against the JWKS the app serves (signature, issuer, audience, subject, expiry); a workspace's token cannot
pass as another's; a rotation publishes two keys and keeps old tokens verifiable until the old key retires."""

from __future__ import annotations

import fnmatch
import json
import os
import stat
import time
from pathlib import Path
from typing import Any

import jwt
import pytest
from run_helpers import RunEnv, make_run_env
from table_items import memory_items
from terrace.adapters.memory_signing_keys import MemorySigningKeys
from terrace.bootstrap import EMBEDDED_KEY, EMBEDDED_SIGNING_KEYS, build_embedded
from terrace.cli import app
from terrace.config import Settings
from terrace.domain import workload_identity as wid
from terrace.domain.jobs import WorkloadCredential
from terrace.runner import workload_identity as runner_identity
from terrace.runner.job_folder import JobFolder
from terrace.runner.rundir import RunSetupError
from terrace.services.access.workload_issuer import PUBLISH_LEAD_S, WorkloadIssuer
from typer.testing import CliRunner

ISSUER = "https://terrace.example.com"
ROLE = "arn:aws:iam::123456789012:role/terrace-app"
# the condition of HCP's documented AWS trust policy: StringLike on `<issuer host>:sub`
TRUSTED_SUB = "organization:acme:project:Default Project:workspace:app:run_phase:*"


def add_env(env: RunEnv, ws: str, key: str, value: str) -> None:
    body = {"data": {"type": "vars", "attributes": {"key": key, "value": value, "category": "env"}}}
    assert env.api("POST", f"/workspaces/{ws}/vars", body).status_code == 201


def verify(env: RunEnv, token: str, audience: str) -> dict[str, Any]:
    """As a relying party does: discovery, then the JWKS, then the token's signature and registered claims."""
    config = env.client.get("/.well-known/openid-configuration").json()
    assert config["issuer"] == ISSUER and config["jwks_uri"] == f"{ISSUER}/.well-known/jwks"
    keys = jwt.PyJWKSet.from_dict(env.client.get("/.well-known/jwks").json())
    kid = jwt.get_unverified_header(token)["kid"]
    [key] = [k for k in keys.keys if k.key_id == kid]
    return dict(jwt.decode(token, key.key, algorithms=["RS256"], audience=audience, issuer=ISSUER,
                           options={"require": ["exp", "iat", "nbf", "sub", "jti"]}))  # fmt: skip


@pytest.fixture
def env() -> RunEnv:
    made = make_run_env(public_url=f"{ISSUER}/", phase_deadline_s=1800)
    add_env(made, made.workspace_id, "TFC_AWS_PROVIDER_AUTH", "true")
    add_env(made, made.workspace_id, "TFC_AWS_RUN_ROLE_ARN", ROLE)
    add_env(made, made.workspace_id, "TFC_WORKLOAD_IDENTITY_AUDIENCE", "my.service")
    return made


def test_a_claimed_job_carries_tokens_that_verify_against_the_jwks(env: RunEnv) -> None:
    assert env.client.get("/.well-known/jwks").json() == {"keys": []}  # no key is made by a read
    run = env.create_run(env.upload_config())
    before = int(time.time())
    spec = env.claim()
    aws, generic = spec["workload_credentials"]
    assert aws["kind"] == "aws" and aws["env"]["AWS_ROLE_ARN"] == ROLE
    assert aws["token_file_env"] == ["AWS_WEB_IDENTITY_TOKEN_FILE"] and generic["token_env"] == [
        "TFC_WORKLOAD_IDENTITY_TOKEN"
    ]
    claims = verify(env, aws["token"], "aws.workload.identity")
    ws = env.api("GET", f"/workspaces/{env.workspace_id}").json()["data"]
    org = env.api("GET", "/organizations/acme").json()["data"]
    assert claims["sub"] == "organization:acme:project:Default Project:workspace:app:run_phase:plan"
    assert fnmatch.fnmatchcase(claims["sub"], TRUSTED_SUB)
    assert claims["terraform_organization_id"] == org["attributes"]["external-id"]
    assert claims["terraform_organization_name"] == "acme"
    assert claims["terraform_workspace_id"] == env.workspace_id and claims["terraform_workspace_name"] == "app"
    assert claims["terraform_project_id"] == ws["relationships"]["project"]["data"]["id"]
    assert claims["terraform_project_name"] == "Default Project"
    assert claims["terraform_full_workspace"] == "organization:acme:project:Default Project:workspace:app"
    assert claims["terraform_run_id"] == run["id"] and claims["terraform_run_phase"] == "plan"
    assert before <= claims["iat"] <= int(time.time()) and claims["nbf"] <= claims["iat"]
    assert claims["exp"] == claims["iat"] + 1800  # valid for the phase (its deadline) only
    assert verify(env, generic["token"], "my.service")["sub"] == claims["sub"]
    with pytest.raises(jwt.InvalidAudienceError):
        verify(env, aws["token"], "gcp.workload.identity")
    stored = str(memory_items(env.container.table))  # the memory table's items
    assert aws["token"] not in stored and "PRIVATE KEY" not in stored  # neither tokens nor keys in the table
    assert (
        "PRIVATE" not in env.client.get("/.well-known/jwks").text
        and '"d"' not in env.client.get("/.well-known/jwks").text
    )


def test_the_apply_gets_its_own_token_and_another_workspace_cannot_pass_as_this_one(env: RunEnv) -> None:
    body = {"data": {"type": "workspaces", "attributes": {"name": "other", "execution-mode": "remote"}}}
    other = env.api("POST", "/organizations/acme/workspaces", body)
    other_id = other.json()["data"]["id"]
    add_env(env, other_id, "TFC_AWS_PROVIDER_AUTH", "true")
    add_env(env, other_id, "TFC_AWS_RUN_ROLE_ARN", ROLE)
    run = env.create_run(env.upload_config())
    env.work_next()
    assert env.api("POST", f"/runs/{run['id']}/actions/apply", {}).status_code == 202
    apply_spec = env.claim()
    assert apply_spec["phase"] == "apply"
    applied = verify(env, apply_spec["workload_credentials"][0]["token"], "aws.workload.identity")
    assert applied["sub"].endswith(":workspace:app:run_phase:apply") and applied["terraform_run_phase"] == "apply"
    env.create_run(env.upload_config(workspace_id=other_id), workspace_id=other_id)
    foreign = verify(env, env.claim()["workload_credentials"][0]["token"], "aws.workload.identity")
    assert foreign["sub"] == "organization:acme:project:Default Project:workspace:other:run_phase:plan"
    assert not fnmatch.fnmatchcase(foreign["sub"], TRUSTED_SUB)  # the trust policy of `app` refuses it
    assert foreign["terraform_workspace_id"] == other_id != applied["terraform_workspace_id"]


def test_a_missing_role_arn_is_reported_to_the_runner_not_signed(env: RunEnv) -> None:
    [var] = [v for v in env.api("GET", f"/workspaces/{env.workspace_id}/vars").json()["data"]
             if v["attributes"]["key"] == "TFC_AWS_RUN_ROLE_ARN"]  # fmt: skip
    assert env.api("DELETE", f"/workspaces/{env.workspace_id}/vars/{var['id']}").status_code == 204
    env.create_run(env.upload_config())
    aws = env.claim()["workload_credentials"][0]
    assert aws["token"] == "" and "TFC_AWS_RUN_ROLE_ARN" in aws["error"]


def test_rotation_publishes_two_keys_and_retires_the_old_one_after_its_tokens_expired() -> None:
    now = [1_000_000.0]
    issuer = WorkloadIssuer(MemorySigningKeys(), ISSUER, token_ttl_s=600, clock=lambda: now[0], cache_s=0)

    def token() -> str:
        exp = int(now[0]) + 600
        return issuer.sign({"iss": ISSUER, "aud": "a", "sub": "s", "iat": int(now[0]), "exp": exp})

    def check(value: str) -> bool:
        keys = {k.key_id: k.key for k in jwt.PyJWKSet.from_dict(issuer.jwks()).keys} if issuer.jwks()["keys"] else {}
        key = keys.get(jwt.get_unverified_header(value)["kid"])
        if key is None:
            return False
        jwt.decode(value, key, algorithms=["RS256"], audience="a", options={"verify_exp": False})
        return True

    old = token()
    old_kid = jwt.get_unverified_header(old)["kid"]
    fresh = issuer.rotate(grace_s=60)
    assert {k["kid"] for k in issuer.jwks()["keys"]} == {old_kid, fresh.kid}  # two published during the rotation
    assert jwt.get_unverified_header(token())["kid"] == old_kid  # the new key waits until verifiers have seen it
    now[0] += PUBLISH_LEAD_S
    newer = token()
    assert jwt.get_unverified_header(newer)["kid"] == fresh.kid
    assert check(old) and check(newer)
    now[0] += 600 + 59  # the old key's last token expired; the grace runs
    assert check(old) and len(issuer.jwks()["keys"]) == 2
    now[0] += 2
    assert [k["kid"] for k in issuer.jwks()["keys"]] == [fresh.kid]  # retired: no longer published
    assert not check(old) and check(newer)
    assert len(issuer.keys()) == 2  # reads never write: the retired key is only no longer published
    assert check(token()) and [k.kid for k in issuer.keys()] == [fresh.kid]  # the next signature deletes it
    assert issuer.retire() == []


def test_a_key_is_parsed_once_per_process_not_per_signature_or_jwks_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loading a private key checks the RSA key whole (tens of milliseconds): a job's claim signs several tokens."""
    from joserfc.jwk import RSAKey

    parsed: list[str] = []
    original = RSAKey.import_key.__func__
    monkeypatch.setattr(
        RSAKey, "import_key", classmethod(lambda cls, *a, **k: parsed.append("") or original(cls, *a, **k))
    )
    issuer = WorkloadIssuer(MemorySigningKeys(), ISSUER, token_ttl_s=600)
    tokens = [issuer.sign({"iss": ISSUER, "aud": "a", "sub": f"s{i}", "exp": int(time.time()) + 600}) for i in range(4)]
    jwks = [issuer.jwks() for _ in range(3)]
    assert len(parsed) == 1 and all(j == jwks[0] for j in jwks) and len(jwks[0]["keys"]) == 1
    [key] = jwt.PyJWKSet.from_dict(jwks[0]).keys
    assert [jwt.decode(t, key.key, algorithms=["RS256"], audience="a")["sub"] for t in tokens] == [
        "s0",
        "s1",
        "s2",
        "s3",
    ]
    assert "d" not in jwks[0]["keys"][0] and "p" not in jwks[0]["keys"][0]  # the public half only


def test_what_each_provider_reads() -> None:
    env = {
        "TFC_AWS_PROVIDER_AUTH": "true",
        "TFC_AWS_RUN_ROLE_ARN": "arn:run",
        "TFC_AWS_APPLY_ROLE_ARN": "arn:apply",
        "TFC_AWS_WORKLOAD_IDENTITY_AUDIENCE": "custom.aws",
        "TFC_GCP_PROVIDER_AUTH": "TRUE",
        "TFC_GCP_RUN_SERVICE_ACCOUNT_EMAIL": "sa@p.iam.gserviceaccount.com",
        "TFC_GCP_PROJECT_NUMBER": "123",
        "TFC_GCP_WORKLOAD_POOL_ID": "pool",
        "TFC_GCP_WORKLOAD_PROVIDER_ID": "prov",
        "TFC_AZURE_PROVIDER_AUTH": "true",
        "TFC_AZURE_RUN_CLIENT_ID": "client-1",
        "TFC_VAULT_PROVIDER_AUTH": "true",
        "TFC_VAULT_ADDR": "https://vault.example.com",
        "TFC_VAULT_RUN_ROLE": "terrace",
        "TFC_VAULT_NAMESPACE": "ns1",
    }
    plan = {w.kind: w for w in wid.wanted(env, "plan", "run-1")}
    apply = {w.kind: w for w in wid.wanted(env, "apply", "run-1")}
    assert list(plan) == ["aws", "gcp", "azure", "vault"]  # no generic token without TFC_WORKLOAD_IDENTITY_AUDIENCE
    assert plan["aws"].env["AWS_ROLE_ARN"] == "arn:run" and apply["aws"].env["AWS_ROLE_ARN"] == "arn:apply"
    assert plan["aws"].audience == "custom.aws" and plan["azure"].audience == "api://AzureADTokenExchange"
    assert plan["gcp"].audience == "gcp.workload.identity" and plan["vault"].audience == "vault.workload.identity"
    gcp = plan["gcp"].gcp_credentials
    assert gcp is not None and plan["gcp"].error is None
    assert (
        gcp["audience"]
        == "//iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/pool/providers/prov"
    )
    assert gcp["service_account_impersonation_url"].endswith(
        "/serviceAccounts/sa@p.iam.gserviceaccount.com:generateAccessToken"
    )
    assert plan["azure"].env == {"ARM_USE_OIDC": "true", "ARM_CLIENT_ID": "client-1"}
    assert plan["azure"].token_file_env == ("ARM_OIDC_TOKEN_FILE_PATH",)
    assert plan["vault"].env == {"VAULT_ADDR": "https://vault.example.com", "VAULT_NAMESPACE": "ns1"}
    assert plan["vault"].token_env == ("TERRAFORM_VAULT_AUTH_JWT",)
    broken = wid.wanted({"TFC_GCP_PROVIDER_AUTH": "true", "TFC_GCP_RUN_SERVICE_ACCOUNT_EMAIL": "x"}, "plan", "r")
    assert broken[0].error is not None and "TFC_GCP_WORKLOAD_PROVIDER_NAME" in broken[0].error
    assert wid.wanted({"TFC_AWS_PROVIDER_AUTH": "false", "TFC_AWS_RUN_ROLE_ARN": "arn"}, "plan", "r") == []


def test_the_runner_hands_tokens_over_in_files_of_the_job(tmp_path: Path) -> None:
    folder = JobFolder.new(tmp_path, "job-", None)
    credentials = [
        WorkloadCredential(kind="aws", token="aws.jwt.token", env={"AWS_ROLE_ARN": ROLE},
                           token_file_env=["AWS_WEB_IDENTITY_TOKEN_FILE"]),
        WorkloadCredential(kind="gcp", token="gcp.jwt.token", gcp_credentials={"type": "external_account",
                           "credential_source": {"file": ""}}),
        WorkloadCredential(kind="generic", token="generic.jwt.token", token_env=["TFC_WORKLOAD_IDENTITY_TOKEN"]),
    ]  # fmt: skip
    env = runner_identity.install(folder, credentials)
    token_file = Path(env["AWS_WEB_IDENTITY_TOKEN_FILE"])
    assert token_file.parent == folder.path and token_file.read_text() == "aws.jwt.token"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o640 and token_file.stat().st_gid == folder.gid
    assert env["AWS_ROLE_ARN"] == ROLE and env["TFC_WORKLOAD_IDENTITY_TOKEN"] == "generic.jwt.token"
    gcp = json.loads(Path(env["GOOGLE_APPLICATION_CREDENTIALS"]).read_text())
    assert Path(gcp["credential_source"]["file"]).read_text() == "gcp.jwt.token"
    assert runner_identity.tokens(credentials) == ["aws.jwt.token", "gcp.jwt.token", "generic.jwt.token"]
    with pytest.raises(RunSetupError, match="TFC_AWS_RUN_ROLE_ARN"):
        runner_identity.install(folder, [WorkloadCredential(kind="aws", error="no TFC_AWS_RUN_ROLE_ARN")])


def test_the_cli_rotates_the_embedded_servers_keys_in_a_private_file_beside_master_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in [k for k in os.environ if k.startswith("TERRACE_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("TERRACE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("TERRACE_URL_SIGNING_SECRET", "s" * 32)
    server = build_embedded(Settings.from_env())
    try:
        first = server.workload_issuer.sign({"sub": "s", "aud": "a"})
        rotated = CliRunner().invoke(app, ["workload-identity", "rotate"])
        assert rotated.exit_code == 0, rotated.output
        old_kid = jwt.get_unverified_header(first)["kid"]
        assert "new signing key" in rotated.output and f"key {old_kid} retires at" in rotated.output
        keys = tmp_path / EMBEDDED_SIGNING_KEYS
        assert keys.parent == (tmp_path / EMBEDDED_KEY).parent and stat.S_IMODE(keys.stat().st_mode) == 0o600
        assert "PRIVATE KEY" in keys.read_text() and "PRIVATE KEY" not in rotated.output
        listed = CliRunner().invoke(app, ["workload-identity", "keys"])
        assert listed.exit_code == 0 and listed.output.count("key ") == 2 and "PRIVATE" not in listed.output
        restarted = build_embedded(Settings.from_env())  # a new process reads the rotation
        assert len(restarted.workload_issuer.jwks()["keys"]) == 2
        restarted.close()
    finally:
        server.close()


def test_a_phase_claimed_late_gets_tokens_that_end_at_the_phases_deadline(env: RunEnv) -> None:
    """The reaper ends a phase `phase_deadline_s` after it started, whatever attempt runs it: a token signed for
    a later attempt (a runner lost, the phase claimed again) ends there too, never a whole deadline later."""
    run_doc = env.create_run(env.upload_config())
    env.claim()
    c = env.container
    run = c.run_store.load(run_doc["id"])
    ws = c.workspaces.load(run.workspace_id)
    variables = c.variables.recorded(run)
    now = int(time.time())
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - 1500))  # 25 of its 30 minutes gone
    [aws, _] = c.workload_tokens.for_job(run, ws, "plan", variables, started_at=started)
    claims = verify(env, aws.token, "aws.workload.identity")
    assert claims["exp"] == now - 1500 + 1800
    [fresh, _] = c.workload_tokens.for_job(run, ws, "plan", variables)  # no start known: the whole deadline
    assert verify(env, fresh.token, "aws.workload.identity")["exp"] >= now + 1800
