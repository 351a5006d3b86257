"""The agent's envelope for a Hold Your Own Key workspace (`runner/hyok_envelope.py`) over each key wrapper (AWS
KMS on moto as the customer's role, the agent host's key file, the memory twin): a state sealed with a fresh data
key opens only with that key and context, a changed byte or another workspace's context is refused, a destroyed
key version makes the data key unopenable, and the sealed blob and wrapped key never hold the plaintext. The
sanitized copy (`domain/sanitized_state.py`) keeps addresses and drops every sensitive value."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import boto3
import pytest
from implementations import IMPLEMENTATIONS
from terrace.adapters.file_key_wrapper import FileKeyWrapper
from terrace.adapters.key_wrapper import CustomerKey, KeyUnavailable, KeyWrapper
from terrace.adapters.kms_key_wrapper import KmsKeyWrapper
from terrace.adapters.memory_key_wrapper import MemoryKeyWrapper
from terrace.domain.sanitized_state import REDACTED, is_sanitized, sanitize
from terrace.runner import hyok_envelope as envelope

Wrapped = tuple[KeyWrapper, CustomerKey, Path | None]
ROLE = "arn:aws:iam::123456789012:role/terrace-hyok"
CONTEXT = {"workspace": "ws-abc", "purpose": "state"}
SECRET = "hunter2-s3cr3t-value"
STATE = {
    "version": 4,
    "terraform_version": "1.11.0",
    "serial": 3,
    "lineage": "f0e1",
    "outputs": {"password": {"value": SECRET, "type": "string", "sensitive": True},
                "name": {"value": "web", "type": "string"}},
    "resources": [{
        "mode": "managed", "type": "random_password", "name": "db", "provider": "provider[\"hashicorp/random\"]",
        "instances": [{"schema_version": 3, "private": "c2VjcmV0LXByaXZhdGU=",
                       "attributes": {"id": "none", "result": SECRET, "length": 16},
                       "sensitive_attributes": [[{"type": "get_attr", "value": "result"}]]}],
    }],
}  # fmt: skip


@pytest.fixture(params=IMPLEMENTATIONS)
def wrapped_by(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[KeyWrapper, CustomerKey, Path | None]:
    if request.param == "memory":
        memory = MemoryKeyWrapper()
        memory.add("team-key")
        return memory, CustomerKey("team-key", "aws"), None
    if request.param == "sqlite":  # the agent host's key file
        key_file = tmp_path / "hyok-keys.json"
        key_file.write_text(json.dumps({"keys": {"team-key": [base64.b64encode(os.urandom(32)).decode()]}}))
        return FileKeyWrapper(key_file), CustomerKey("team-key", "aws"), key_file
    endpoint = request.getfixturevalue("moto_endpoint")
    arn = boto3.client("kms", endpoint_url=endpoint, region_name="eu-west-1").create_key()["KeyMetadata"]["Arn"]
    wrapper = KmsKeyWrapper(region="us-east-1", endpoint_url=endpoint)
    return wrapper, CustomerKey(arn, "aws", {"key-region": "eu-west-1"}, {"role-arn": ROLE}, "h.c.s"), None


def test_a_state_round_trips_through_a_wrapped_data_key(
    wrapped_by: tuple[KeyWrapper, CustomerKey, Path | None],
) -> None:
    wrapper, key, _ = wrapped_by
    raw = json.dumps(STATE).encode()
    data_key = envelope.new_data_key(wrapper, key, CONTEXT)
    sealed = envelope.seal(data_key.plaintext, raw, CONTEXT)
    assert SECRET.encode() not in sealed and envelope.is_sealed(sealed)
    assert base64.b64encode(data_key.plaintext).decode() not in data_key.wrapped and data_key.key_version
    reopened = envelope.open_data_key(wrapper, key, data_key.wrapped, CONTEXT)
    assert envelope.unseal(reopened, sealed, CONTEXT) == raw


def test_a_changed_byte_or_another_context_is_refused(wrapped_by: Wrapped) -> None:
    wrapper, key, _ = wrapped_by
    data_key = envelope.new_data_key(wrapper, key, CONTEXT)
    sealed = bytearray(envelope.seal(data_key.plaintext, b'{"serial": 1}', CONTEXT))
    with pytest.raises(envelope.EnvelopeError, match="another workspace"):
        envelope.unseal(data_key.plaintext, bytes(sealed), {**CONTEXT, "workspace": "ws-other"})
    sealed[-1] ^= 1
    with pytest.raises(envelope.EnvelopeError, match="changed"):
        envelope.unseal(data_key.plaintext, bytes(sealed), CONTEXT)
    with pytest.raises(envelope.EnvelopeError, match="not encrypted"):
        envelope.unseal(data_key.plaintext, b'{"serial": 1}', CONTEXT)
    with pytest.raises(KeyUnavailable):  # the wrapped key is bound to its context too
        envelope.open_data_key(wrapper, key, data_key.wrapped, {**CONTEXT, "workspace": "ws-other"})


def test_a_destroyed_key_version_leaves_the_data_key_unopenable(tmp_path: Path) -> None:
    """The key file's owner replaces a version with null (the key service's destruction): what it wrapped is gone."""
    key_file = tmp_path / "keys.json"
    first = base64.b64encode(os.urandom(32)).decode()
    key_file.write_text(json.dumps({"keys": {"team-key": [first]}}))
    wrapper, key = FileKeyWrapper(key_file), CustomerKey("team-key", "aws")
    data_key = envelope.new_data_key(wrapper, key, CONTEXT)
    key_file.write_text(json.dumps({"keys": {"team-key": [None, base64.b64encode(os.urandom(32)).decode()]}}))
    with pytest.raises(KeyUnavailable, match="destroyed"):
        envelope.open_data_key(wrapper, key, data_key.wrapped, CONTEXT)


def test_the_sanitized_state_keeps_addresses_and_drops_secrets() -> None:
    clean = sanitize(STATE)
    assert SECRET not in json.dumps(clean) and "c2VjcmV0" not in json.dumps(clean)
    assert clean["outputs"]["password"]["value"] == REDACTED and clean["outputs"]["name"]["value"] == "web"
    instance = clean["resources"][0]["instances"][0]
    assert instance["attributes"] == {"id": "none", "result": REDACTED, "length": 16}
    assert (clean["serial"], clean["lineage"]) == (3, "f0e1")
    assert is_sanitized(clean) and not is_sanitized(STATE)
    assert STATE["outputs"]["password"]["value"] == SECRET  # the original is left alone
