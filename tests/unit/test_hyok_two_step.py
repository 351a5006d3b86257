"""A Hold Your Own Key workspace's two-step state upload, as HCP Terraform's (`services/state/hyok_uploads.py`): the
pending version answers `hosted-state-upload-url` for the encrypted state and `sanitized-state-upload-url` for its
sanitized copy, never a JSON state URL; it becomes current once both landed, in either order; an upload that is not
encrypted is deleted and the version discarded; without a wrapped data key of its own the version is encrypted with
the workspace's data key for encryption."""

from __future__ import annotations

import json

import pytest
from hyok_helpers import KEK, SECRET, enable_hyok, make_hyok_env, sanitized_copy, state_doc, upload
from run_helpers import RunEnv
from terrace.adapters.key_wrapper import CustomerKey
from terrace.domain.sanitized_state import REDACTED
from terrace.domain.state import md5_hex
from terrace.runner import hyok_envelope as envelope


@pytest.fixture(scope="module")
def env() -> RunEnv:
    env = make_hyok_env("hyoktwo")
    enable_hyok(env, env.workspace_id)
    assert env.api("POST", f"/workspaces/{env.workspace_id}/actions/lock", {}).status_code == 200
    assert upload(env, 1).status_code == 201  # the agent's first state: the workspace's data key for encryption
    return env


def _create(env: RunEnv, serial: int, md5: str, **attrs: object) -> object:
    body = {"data": {"type": "state-versions", "attributes": {"serial": serial, "md5": md5,
                                                              "lineage": "hyok-lineage", **attrs}}}  # fmt: skip
    return env.api("POST", f"/workspaces/{env.workspace_id}/state-versions", body)


def _sealed_with_workspace_key(env: RunEnv, serial: int) -> bytes:
    """State `serial` sealed under the workspace's data key, as whoever holds the customer's key seals it."""
    ws = env.api("GET", f"/workspaces/{env.workspace_id}").json()["data"]
    data_key = env.container.hyok_store.data_key(ws["relationships"]["hyok-data-key-for-encryption"]["data"]["id"])
    assert data_key is not None
    plain = envelope.open_data_key(env.container.key_wrapper, CustomerKey(KEK, "aws"), data_key.encrypted_dek,
                                   data_key.context)  # fmt: skip
    return envelope.seal(plain, json.dumps(state_doc(serial)).encode(), data_key.context)


def test_the_sanitized_copy_and_the_encrypted_state_land_in_either_order(env: RunEnv) -> None:
    sealed = _sealed_with_workspace_key(env, 2)
    created = _create(env, 2, md5_hex(sealed))
    assert created.status_code == 201, created.text  # type: ignore[attr-defined]
    sv = created.json()["data"]  # type: ignore[attr-defined]
    attrs = sv["attributes"]
    assert attrs["hosted-state-upload-url"] and attrs["sanitized-state-upload-url"]
    assert attrs["hosted-json-state-upload-url"] is None  # a JSON state holds every value in the clear
    ws = env.api("GET", f"/workspaces/{env.workspace_id}").json()["data"]
    key = ws["relationships"]["hyok-data-key-for-encryption"]["data"]["id"]
    assert sv["relationships"]["hyok-encrypted-data-key"]["data"]["id"] == key
    read = env.api("GET", f"/state-versions/{sv['id']}").json()["data"]["attributes"]
    assert read["sanitized-state-upload-url"] is None  # only the creator gets the upload URLs

    stored = env.container.state_store.load(sv["id"])
    env.land(stored.sanitized_blob_key, sanitized_copy(2))
    assert env.api("GET", f"/state-versions/{sv['id']}").json()["data"]["attributes"]["status"] == "pending"
    env.land(stored.blob_key, sealed)
    read = env.api("GET", f"/state-versions/{sv['id']}").json()["data"]["attributes"]
    assert read["status"] == "finalized" and read["hosted-state-download-url"] and read["sanitized-state-download-url"]
    current = env.api("GET", f"/workspaces/{env.workspace_id}/current-state-version").json()["data"]
    assert current["id"] == sv["id"]
    uploaded = [e for e in env.container.publisher.events  # type: ignore[attr-defined]
                if e.get("type") == "state.uploaded" and e.get("state_version_id") == sv["id"]]  # fmt: skip
    for event in uploaded:  # the events worker indexes the sanitized copy
        env.container.events.handle(event)
    outputs = env.api("GET", f"/state-versions/{sv['id']}/outputs").json()["data"]
    assert {o["attributes"]["name"]: o["attributes"]["value"] for o in outputs} == {"password": REDACTED, "name": "web"}
    assert SECRET.encode() not in env.blobs.get(stored.blob_key)


def test_a_plain_state_uploaded_to_a_hyok_version_is_deleted_not_kept(env: RunEnv) -> None:
    plain = json.dumps(state_doc(3)).encode()
    refused = _create(env, 3, md5_hex(plain), **{"json-state-outputs": "e30="})
    assert refused.status_code == 422 and "in the clear" in refused.text  # type: ignore[attr-defined]
    created = _create(env, 3, md5_hex(plain))
    sv = created.json()["data"]  # type: ignore[attr-defined]
    stored = env.container.state_store.load(sv["id"])
    env.land(stored.sanitized_blob_key, sanitized_copy(3))
    env.land(stored.blob_key, plain)
    read = env.api("GET", f"/state-versions/{sv['id']}").json()["data"]["attributes"]
    assert read["status"] == "discarded" and "not encrypted" in read["error"]
    assert env.blobs.head(stored.blob_key) is None


def test_an_agents_two_step_upload_names_its_own_data_key(env: RunEnv) -> None:
    context = {"workspace": env.workspace_id, "purpose": "state"}
    data_key = envelope.new_data_key(env.container.key_wrapper, CustomerKey(KEK, "aws"), context)
    sealed = envelope.seal(data_key.plaintext, json.dumps(state_doc(4)).encode(), context)
    wrapped = {"hyok-encrypted-dek": data_key.wrapped, "hyok-key-version": data_key.key_version,
               "hyok-context": context}  # fmt: skip
    created = _create(env, 4, md5_hex(sealed), **wrapped)
    assert created.status_code == 201, created.text  # type: ignore[attr-defined]
    sv = created.json()["data"]  # type: ignore[attr-defined]
    recorded = env.container.hyok_store.data_key(sv["relationships"]["hyok-encrypted-data-key"]["data"]["id"])
    assert recorded is not None and recorded.encrypted_dek == data_key.wrapped
    stored = env.container.state_store.load(sv["id"])
    env.land(stored.blob_key, sealed)
    env.land(stored.sanitized_blob_key, sanitized_copy(4))
    assert env.api("GET", f"/state-versions/{sv['id']}").json()["data"]["attributes"]["status"] == "finalized"
