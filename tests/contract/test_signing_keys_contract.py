"""The SigningKeyStore port (`adapters/signing_keys.py`) on memory, the embedded server's 0600 file and SSM
SecureString parameters (moto): keys round-trip, a put replaces by kid, a delete removes one (and is quiet when
absent), and the private half never shows in a repr."""

from __future__ import annotations

import os
import stat
import uuid
from pathlib import Path

import boto3
import pytest
from implementations import IMPLEMENTATIONS
from terrace.adapters.file_signing_keys import FileSigningKeys
from terrace.adapters.memory_signing_keys import MemorySigningKeys
from terrace.adapters.signing_keys import SigningKey, SigningKeyStore
from terrace.adapters.ssm_signing_keys import SsmSigningKeys

PEM = "-----BEGIN PRIVATE KEY-----\n" + "A" * 1600 + "\n-----END PRIVATE KEY-----\n"  # a 2048-bit key's size


@pytest.fixture(params=IMPLEMENTATIONS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> SigningKeyStore:
    if request.param == "memory":
        return MemorySigningKeys()
    if request.param == "sqlite":  # the embedded server's store: a file beside master.key
        return FileSigningKeys(tmp_path / "workload-identity.keys")
    ssm = boto3.client("ssm", endpoint_url=request.getfixturevalue("moto_endpoint"), region_name="us-east-1")
    return SsmSigningKeys(ssm, f"/terrace-{uuid.uuid4().hex[:8]}/workload-identity")


def key(kid: str, retire_at: float | None = None) -> SigningKey:
    return SigningKey(kid=kid, private_pem=PEM + kid, created_at=1.5, signs_from=2.0, retire_at=retire_at)


def test_keys_round_trip_replace_and_delete(store: SigningKeyStore) -> None:
    assert store.load() == []
    store.put(key("k1"))
    store.put(key("k2"))
    assert sorted(store.load(), key=lambda k: k.kid) == [key("k1"), key("k2")]
    store.put(key("k1", retire_at=99.0))  # replaced, not added
    assert sorted(store.load(), key=lambda k: k.kid) == [key("k1", 99.0), key("k2")]
    store.delete("k1")
    store.delete("absent")
    assert store.load() == [key("k2")]
    assert PEM not in repr(store.load())


def test_many_keys_are_all_listed(store: SigningKeyStore) -> None:
    for n in range(12):  # past one SSM page (10)
        store.put(key(f"k{n:02d}"))
    assert sorted(k.kid for k in store.load()) == [f"k{n:02d}" for n in range(12)]


def test_key_file_is_private(tmp_path: Path) -> None:
    path = tmp_path / "workload-identity.keys"
    FileSigningKeys(path).put(key("k1"))
    FileSigningKeys(path).put(key("k2"))
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert {k.kid for k in FileSigningKeys(path).load()} == {"k1", "k2"}  # a restart reads the same keys
