"""A Hold Your Own Key workspace's state on the server (`services/state/hyok_state.py`): `hyok-enabled` is accepted
once the organization has an available primary HYOK configuration (its runs then go to that configuration's agent
pool); the state is written only as the agent's envelope with a sanitized copy and the wrapped data key; the server
stores ciphertext (the state's sensitive value is nowhere in what it keeps), reads outputs and the resource index
from the sanitized copy, serves both downloads, refuses what it cannot do without the plaintext (a plain state, a
two-step upload, a rollback, turning HYOK off), and stops serving the ciphertext once the customer key version that
wrapped its data key is revoked."""

from __future__ import annotations

import base64
import json

import pytest
from hyok_helpers import KEK, SECRET, make_hyok_env
from hyok_helpers import state_doc as _state
from hyok_helpers import upload as _upload
from run_helpers import RunEnv
from terrace.domain.principal import PrincipalKind
from terrace.domain.sanitized_state import REDACTED
from terrace.domain.state import md5_hex
from terrace.domain.state_versions import sanitized_state_blob_key, state_blob_key
from terrace.runner import hyok_envelope as envelope


@pytest.fixture(scope="module")
def env() -> RunEnv:
    return make_hyok_env("hyokco")


def test_a_hyok_workspace_keeps_only_ciphertext_and_reads_the_sanitized_copy(env: RunEnv) -> None:
    on = env.api("PATCH", f"/workspaces/{env.workspace_id}",
                 {"data": {"type": "workspaces", "attributes": {"hyok-enabled": True}}})  # fmt: skip
    assert on.status_code == 200, on.text
    attrs = on.json()["data"]["attributes"]
    assert attrs["hyok-enabled"] is True and attrs["execution-mode"] == "agent"
    assert env.api("POST", f"/workspaces/{env.workspace_id}/actions/lock", {}).status_code == 200
    plain = json.dumps(_state(1)).encode()
    refused = env.api("POST", f"/workspaces/{env.workspace_id}/state-versions", {"data": {"type": "state-versions",
        "attributes": {"serial": 1, "md5": md5_hex(plain), "state": base64.b64encode(plain).decode()}}})  # fmt: skip
    assert refused.status_code == 422 and "Hold Your Own Key" in refused.json()["errors"][0]["detail"]
    two_step = env.api(
        "POST",
        f"/workspaces/{env.workspace_id}/state-versions",
        {"data": {"type": "state-versions", "attributes": {"serial": 1, "md5": md5_hex(plain)}}},
    )
    assert two_step.status_code == 422
    unsanitized = base64.b64encode(plain).decode()
    assert _upload(env, 1, **{"sanitized-state": unsanitized}).status_code == 422

    created = _upload(env, 1)
    assert created.status_code == 201, created.text
    sv = created.json()["data"]
    blobs = env.container.blobs
    stored = blobs.get(state_blob_key(env.workspace_id, sv["id"]))
    assert envelope.is_sealed(stored) and SECRET.encode() not in stored
    assert SECRET.encode() not in blobs.get(sanitized_state_blob_key(env.workspace_id, sv["id"]))
    assert sv["attributes"]["encrypted-state-download-url"] == sv["attributes"]["hosted-state-download-url"]
    assert sv["attributes"]["sanitized-state-download-url"].endswith(f"/state-versions/{sv['id']}/sanitized-download")
    data_key_id = sv["relationships"]["hyok-encrypted-data-key"]["data"]["id"]
    shown = env.api("GET", f"/hyok-encrypted-data-keys/{data_key_id}").json()["data"]["attributes"]
    assert shown["customer-key-name"] == KEK and SECRET not in shown["encrypted-dek"]
    outputs = env.api("GET", f"/state-versions/{sv['id']}/outputs").json()["data"]
    assert {o["attributes"]["name"]: o["attributes"]["value"] for o in outputs} == {"password": REDACTED, "name": "web"}
    resources = env.api("GET", f"/workspaces/{env.workspace_id}/resources").json()["data"]
    assert [r["attributes"]["address"] for r in resources] == ["random_password.db"]
    assert env.api("GET", f"/state-versions/{sv['id']}/download", follow_redirects=False).status_code == 302
    assert env.api("GET", f"/state-versions/{sv['id']}/sanitized-download", follow_redirects=False).status_code == 302
    target = {"rollback-state-version": {"data": {"type": "state-versions", "id": sv["id"]}}}
    rollback = env.api("PATCH", f"/workspaces/{env.workspace_id}/state-versions",
                       {"data": {"type": "state-versions", "relationships": target}})  # fmt: skip
    assert rollback.status_code == 422 and "cannot roll it back" in rollback.text
    off = env.api("PATCH", f"/workspaces/{env.workspace_id}",
                  {"data": {"type": "workspaces", "attributes": {"hyok-enabled": False}}})  # fmt: skip
    assert off.status_code == 400 and "may not be disabled once it has been turned on" in off.text

    # another workspace's run (terraform_remote_state) reads the sanitized copy; the workspace's own, the ciphertext
    share = {"data": {"type": "workspaces", "attributes": {"global-remote-state": True}}}
    assert env.api("PATCH", f"/workspaces/{env.workspace_id}", share).status_code == 200
    reader = env.api("POST", "/organizations/hyokco/workspaces", {"data": {"type": "workspaces",
                     "attributes": {"name": "reader"}}}).json()["data"]["id"]  # fmt: skip
    for workspace_id, key in ((reader, "sanitized.tfstate"), (env.workspace_id, f"{sv['id']}.tfstate")):
        issued = env.container.accounts.issue_token(
            PrincipalKind.RUN, env.create_run(env.upload_config(workspace_id=workspace_id), workspace_id)["id"],
            organization="hyokco", workspace_id=workspace_id,
        )  # fmt: skip
        answer = env.client.get(f"/api/v2/state-versions/{sv['id']}/download", follow_redirects=False,
                                headers={"Authorization": f"Bearer {issued.secret}"})  # fmt: skip
        assert answer.status_code == 302 and key in answer.headers["location"], (workspace_id, answer.text)

    (hyok,) = env.container.hyok_store.hyoks_of(env.container.organizations.lookup("hyokco").key)
    versions = env.container.hyok_store.key_versions_of(hyok.id)
    for version in versions:
        assert env.api("POST", f"/hyok-customer-key-versions/{version.id}/actions/revoke").status_code == 202
    gone = env.api("GET", f"/state-versions/{sv['id']}/download", follow_redirects=False)
    assert gone.status_code == 409 and "revoked: it can no longer be decrypted" in gone.json()["errors"][0]["detail"]
    assert _upload(env, 2).status_code == 409  # a revoked version wraps nothing new


def test_an_organization_that_enforces_hyok_makes_every_new_workspace_hyok(env: RunEnv) -> None:
    enforce = {"data": {"type": "organizations", "attributes": {"enforce-hyok": True}}}
    answer = env.api("PATCH", "/organizations/hyokco", enforce)
    assert answer.status_code == 200 and answer.json()["data"]["attributes"]["enforce-hyok"] is True
    created = env.api("POST", "/organizations/hyokco/workspaces",
                      {"data": {"type": "workspaces", "attributes": {"name": "enforced"}}})  # fmt: skip
    assert created.status_code == 201, created.text
    attrs = created.json()["data"]["attributes"]
    assert attrs["hyok-enabled"] is True and attrs["execution-mode"] == "agent"
    opted_out = env.api("POST", "/organizations/hyokco/workspaces", {"data": {"type": "workspaces",
                        "attributes": {"name": "opted-out", "hyok-enabled": False}}})  # fmt: skip
    assert opted_out.status_code == 422 and "enforces Hold Your Own Key" in opted_out.text
    enforce["data"]["attributes"]["enforce-hyok"] = False
    assert env.api("PATCH", "/organizations/hyokco", enforce).status_code == 200
