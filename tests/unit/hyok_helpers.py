"""An organization with an available primary HYOK configuration on the memory key ring, and what an agent uploads
to a HYOK workspace (`runner/hyok_state.py`): shared by the HYOK unit tests."""

from __future__ import annotations

import base64
import json
from typing import Any

from run_helpers import RunEnv, make_run_env
from terrace.adapters.key_wrapper import CustomerKey
from terrace.adapters.memory_key_wrapper import MemoryKeyWrapper
from terrace.domain.sanitized_state import sanitize
from terrace.domain.state import md5_hex
from terrace.runner import hyok_envelope as envelope
from terrace.services.hyok.key_test import EVENT

KEK = "arn:aws:kms:us-east-1:123456789012:key/hyok-state"
SECRET = "pa55-w0rd-never-on-the-server"


def make_hyok_env(organization: str) -> RunEnv:
    """A run environment whose organization has a tested (available) primary HYOK configuration with key `KEK`."""
    env = make_run_env(organization)
    wrapper = env.container.key_wrapper
    assert isinstance(wrapper, MemoryKeyWrapper)
    wrapper.add(KEK)
    oidc = env.api(
        "POST",
        f"/organizations/{organization}/oidc-configurations",
        {"data": {"type": "aws-oidc-configurations", "attributes": {"role-arn": "arn:aws:iam::123456789012:role/t"}}},
    )
    pool = env.api(
        "POST",
        f"/organizations/{organization}/agent-pools",
        {"data": {"type": "agent-pools", "attributes": {"name": "hyok-agents"}}},
    )
    rels = {
        "oidc-configuration": {"data": {"type": "aws-oidc-configurations", "id": oidc.json()["data"]["id"]}},
        "agent-pool": {"data": {"type": "agent-pools", "id": pool.json()["data"]["id"]}},
    }
    attrs = {"name": "team", "kek-id": KEK, "kms-options": {"key-region": "us-east-1"}}
    created = env.api(
        "POST",
        f"/organizations/{organization}/hyok-configurations",
        {"data": {"type": "hyok-configurations", "attributes": attrs, "relationships": rels}},
    )
    assert created.status_code == 201, created.text
    queued = [e for e in env.container.publisher.events if e.get("type") == EVENT]  # type: ignore[attr-defined]
    for event in queued:
        env.container.events.handle(event)
    return env


def enable_hyok(env: RunEnv, workspace_id: str) -> None:
    on = env.api("PATCH", f"/workspaces/{workspace_id}",
                 {"data": {"type": "workspaces", "attributes": {"hyok-enabled": True}}})  # fmt: skip
    assert on.status_code == 200, on.text


def state_doc(serial: int) -> dict[str, Any]:
    return {
        "version": 4, "terraform_version": "1.11.0", "serial": serial, "lineage": "hyok-lineage",
        "outputs": {"password": {"value": SECRET, "type": "string", "sensitive": True},
                    "name": {"value": "web", "type": "string"}},
        "resources": [{"mode": "managed", "type": "random_password", "name": "db",
                       "provider": "provider[\"registry.terraform.io/hashicorp/random\"]",
                       "instances": [{"schema_version": 3, "attributes": {"id": "none", "result": SECRET},
                                      "sensitive_attributes": [[{"type": "get_attr", "value": "result"}]]}]}],
    }  # fmt: skip


def sanitized_copy(serial: int) -> bytes:
    return json.dumps(sanitize(state_doc(serial))).encode()


def sealed_state(env: RunEnv, workspace_id: str, serial: int) -> tuple[bytes, dict[str, Any]]:
    """The envelope of `state_doc(serial)` and its attributes (the sanitized copy and the wrapped data key)."""
    state = state_doc(serial)
    context = {"workspace": workspace_id, "purpose": "state"}
    data_key = envelope.new_data_key(env.container.key_wrapper, CustomerKey(KEK, "aws"), context)
    sealed = envelope.seal(data_key.plaintext, json.dumps(state).encode(), context)
    attrs = {
        "serial": serial, "md5": md5_hex(sealed), "lineage": "hyok-lineage",
        "sanitized-state": base64.b64encode(json.dumps(sanitize(state)).encode()).decode(),
        "hyok-encrypted-dek": data_key.wrapped, "hyok-key-version": data_key.key_version, "hyok-context": context,
    }  # fmt: skip
    return sealed, attrs


def upload(env: RunEnv, serial: int, workspace_id: str | None = None, **override: Any) -> Any:
    """What the agent sends (`runner/hyok_state.py`): the envelope, the sanitized copy and the wrapped data key."""
    workspace_id = workspace_id or env.workspace_id
    sealed, attrs = sealed_state(env, workspace_id, serial)
    attrs = {**attrs, "state": base64.b64encode(sealed).decode(), **override}
    return env.api("POST", f"/workspaces/{workspace_id}/state-versions",
                   {"data": {"type": "state-versions", "attributes": attrs}})  # fmt: skip
