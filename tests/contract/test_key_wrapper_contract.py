"""The KeyWrapper port (`adapters/key_wrapper.py`, Hold Your Own Key) on AWS KMS (moto, reached as the customer's
role through AssumeRoleWithWebIdentity), the embedded server's key file and the memory twin: a data key round-trips,
opens only with its context, the wrapped form never holds the plaintext, and a key that is not there, or a removed
version, is a `KeyUnavailable` with a reason."""

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

ROLE = "arn:aws:iam::123456789012:role/terrace-hyok"
CONTEXT = {"hyok-configuration": "hyokc-1", "purpose": "test"}


@pytest.fixture(params=IMPLEMENTATIONS)
def wrapped_by(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[KeyWrapper, CustomerKey]:
    if request.param == "memory":
        memory = MemoryKeyWrapper()
        memory.add("team-key")
        return memory, CustomerKey("team-key", "vault")
    if request.param == "sqlite":  # the embedded server's key file
        key_file = tmp_path / "hyok-keys.json"
        key_file.write_text(json.dumps({"keys": {"team-key": [base64.b64encode(os.urandom(32)).decode()]}}))
        return FileKeyWrapper(key_file), CustomerKey("team-key", "aws")
    endpoint = request.getfixturevalue("moto_endpoint")
    kms = boto3.client("kms", endpoint_url=endpoint, region_name="eu-west-1")
    arn = kms.create_key()["KeyMetadata"]["Arn"]
    wrapper = KmsKeyWrapper(region="us-east-1", endpoint_url=endpoint)
    return wrapper, CustomerKey(arn, "aws", {"key-region": "eu-west-1"}, {"role-arn": ROLE}, "header.claims.sig")


def test_a_data_key_round_trips_only_with_its_context(wrapped_by: tuple[KeyWrapper, CustomerKey]) -> None:
    wrapper, key = wrapped_by
    data_key = os.urandom(32)
    wrapped = wrapper.wrap(key, data_key, CONTEXT)
    assert wrapped.key_version and base64.b64encode(data_key).decode() not in wrapped.ciphertext
    assert wrapper.unwrap(key, wrapped.ciphertext, CONTEXT) == data_key
    with pytest.raises(KeyUnavailable):
        wrapper.unwrap(key, wrapped.ciphertext, {**CONTEXT, "purpose": "state"})


def test_a_key_that_is_not_there_is_unavailable_with_a_reason(wrapped_by: tuple[KeyWrapper, CustomerKey]) -> None:
    wrapper, key = wrapped_by
    missing = CustomerKey(
        key.kek_id.rsplit("/", 1)[0] + "/not-a-key" if "/" in key.kek_id else "not-a-key",
        key.oidc_kind, key.kms_options, key.oidc, key.web_identity_token,
    )  # fmt: skip
    with pytest.raises(KeyUnavailable, match=r"\S"):
        wrapper.wrap(missing, os.urandom(32), CONTEXT)


def test_kms_reaches_only_aws_keys_and_only_as_a_role(moto_endpoint: str) -> None:
    wrapper = KmsKeyWrapper(region="us-east-1", endpoint_url=moto_endpoint)
    with pytest.raises(KeyUnavailable, match="AWS KMS only"):
        wrapper.wrap(CustomerKey("projects/p/keys/k", "gcp"), os.urandom(32), CONTEXT)
    with pytest.raises(KeyUnavailable, match="assuming"):  # no role: STS refuses, KMS is never asked
        wrapper.wrap(CustomerKey("alias/x", "aws", {"key-region": "us-east-1"}, {}, "t"), os.urandom(32), CONTEXT)


def test_the_key_file_rotates_and_forgets_versions(tmp_path: Path) -> None:
    key_file = tmp_path / "hyok-keys.json"
    first, second = (base64.b64encode(os.urandom(32)).decode() for _ in range(2))
    key_file.write_text(json.dumps({"keys": {"team-key": [first]}}))
    wrapper, key = FileKeyWrapper(key_file), CustomerKey("team-key", "aws")
    old = wrapper.wrap(key, b"k" * 32, CONTEXT)
    key_file.write_text(json.dumps({"keys": {"team-key": [first, second]}}))
    new = wrapper.wrap(key, b"k" * 32, CONTEXT)
    assert (old.key_version, new.key_version) == ("team-key/1", "team-key/2")
    assert wrapper.unwrap(key, old.ciphertext, CONTEXT) == wrapper.unwrap(key, new.ciphertext, CONTEXT) == b"k" * 32
    key_file.write_text(json.dumps({"keys": {"team-key": [None, second]}}))  # version 1 destroyed
    with pytest.raises(KeyUnavailable, match="version 1 of key team-key was destroyed"):
        wrapper.unwrap(key, old.ciphertext, CONTEXT)
    assert wrapper.unwrap(key, new.ciphertext, CONTEXT) == b"k" * 32
    with pytest.raises(KeyUnavailable, match="TERRACE_HYOK_KEY_FILE"):
        FileKeyWrapper(None).wrap(key, b"k" * 32, CONTEXT)
    key_file.write_text("{not json")
    with pytest.raises(KeyUnavailable, match="not JSON"):
        wrapper.wrap(key, b"k" * 32, CONTEXT)


def test_a_hyok_configuration_is_tested_against_kms_as_its_role(moto_endpoint: str) -> None:
    """The AWS path end to end (moto): the key test signs a workload identity token, assumes the AWS OIDC
    configuration's role with it and has KMS wrap and unwrap a data key; the key version is the key's ARN, and
    Terrace keeps only the wrapped data key (which opens until its key version is revoked)."""
    from terrace.bootstrap import build_memory
    from terrace.domain.errors import Conflict
    from terrace.domain.principal import Principal, PrincipalKind

    arn = boto3.client("kms", endpoint_url=moto_endpoint, region_name="eu-west-1").create_key()["KeyMetadata"]["Arn"]
    container = build_memory()
    container.key_wrapper = KmsKeyWrapper(region="us-east-1", endpoint_url=moto_endpoint)  # before any service
    user = container.accounts.create_user("alice", "alice@example.com")
    alice = Principal(PrincipalKind.USER, user.id, "alice")
    container.organizations.create(alice, "acme", "a@example.com")
    pool = container.agent_pools.create(alice, "acme", {"name": "hyok"}, {})
    oidc = container.oidc_configurations.create(alice, "acme", "aws-oidc-configurations", {"role-arn": ROLE})
    options = {"name": "kms", "kek-id": arn, "kms-options": {"key-region": "eu-west-1"}}
    hyok = container.hyok_configurations.create(alice, "acme", options, oidc.id, pool.id)
    tested = container.hyok_configurations.test(alice, hyok.id)
    assert (tested.status, tested.error) == ("available", None)
    (version,) = container.hyok_store.key_versions_of(hyok.id)
    (data_key,) = container.hyok_store.data_keys_of(version.id)
    assert version.key_version == arn and data_key.customer_key_name == arn
    assert len(container.hyok_key_versions.open(data_key.id)) == 32
    container.hyok_configurations.revoke(alice, hyok.id)
    with pytest.raises(Conflict, match="revoked"):
        container.hyok_key_versions.open(data_key.id)
