"""The Encryptor port (`adapters/encryptor.py`) on KMS (moto), local AES-GCM envelopes and the memory twin: values
round-trip, and a ciphertext opens only with the encryption context it was made with."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import boto3
import pytest
from implementations import IMPLEMENTATIONS
from terrace.adapters.encryptor import Encryptor
from terrace.adapters.kms_encryptor import KmsEncryptor
from terrace.adapters.local_encryptor import LocalEncryptor
from terrace.adapters.memory_encryptor import MemoryEncryptor


@pytest.fixture(params=IMPLEMENTATIONS)
def encryptor(request: pytest.FixtureRequest, tmp_path: Path) -> Encryptor:
    if request.param == "memory":
        return MemoryEncryptor()
    if request.param == "sqlite":  # the embedded server's encryptor
        return LocalEncryptor(tmp_path / "master.key")
    kms = boto3.client("kms", endpoint_url=request.getfixturevalue("moto_endpoint"), region_name="us-east-1")
    return KmsEncryptor(kms, kms.create_key()["KeyMetadata"]["KeyId"])


CONTEXT = {"workspace": "ws-1", "variable": "var-1"}


def test_round_trip_and_context_binding(encryptor: Encryptor) -> None:
    for value in ("s3cr3t", "", "ünïcødé ✓ " * 100):
        sealed = encryptor.encrypt(value, CONTEXT)
        assert value == "" or value not in sealed
        assert encryptor.decrypt(sealed, CONTEXT) == value
    sealed = encryptor.encrypt("s3cr3t", CONTEXT)
    with pytest.raises(Exception):  # noqa: B017 - each implementation raises its own error type
        encryptor.decrypt(sealed, {**CONTEXT, "variable": "var-2"})


def test_local_key_file_is_private_and_reused(tmp_path: Path) -> None:
    path = tmp_path / "master.key"
    sealed = LocalEncryptor(path).encrypt("s3cr3t", CONTEXT)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert LocalEncryptor(path).decrypt(sealed, CONTEXT) == "s3cr3t"  # a restart reads the same key
    assert LocalEncryptor(path).encrypt("s3cr3t", CONTEXT) != sealed  # a fresh data key and nonce every time
    tampered = bytearray(sealed.encode())
    tampered[-5] = ord("A") if tampered[-5] != ord("A") else ord("B")
    with pytest.raises(Exception):  # noqa: B017
        LocalEncryptor(path).decrypt(tampered.decode(), CONTEXT)
    with pytest.raises(Exception):  # noqa: B017
        LocalEncryptor(tmp_path / "other.key").decrypt(sealed, CONTEXT)


def test_data_key_from_ssm_seals_new_values_and_still_opens_kms_ones(moto_endpoint: str) -> None:
    """The default AWS deployment (adapters/data_key_encryptor.py): the key comes from an SSM SecureString the
    way the functions read it (resolve_secrets), values sealed under the KMS key of an older stack still open."""
    import base64

    from terrace.adapters.data_key_encryptor import DataKeyEncryptor, decode_key
    from terrace.adapters.secrets import resolve_secrets
    from terrace.config import Settings

    ssm = boto3.client("ssm", endpoint_url=moto_endpoint, region_name="us-east-1")
    ssm.put_parameter(Name="/terrace/t/data-key", Value=base64.b64encode(os.urandom(32)).decode(), Type="SecureString")
    arn = "arn:aws:ssm:us-east-1:123456789012:parameter/terrace/t/data-key"
    settings = Settings(TERRACE_TABLE="t", TERRACE_BLOB_BUCKET="b", TERRACE_DATA_KEY_ARN=arn)
    key = decode_key(resolve_secrets(settings, ssm).data_key)
    kms = boto3.client("kms", endpoint_url=moto_endpoint, region_name="us-east-1")
    legacy = KmsEncryptor(kms, kms.create_key()["KeyMetadata"]["KeyId"])
    old = legacy.encrypt("from-before", CONTEXT)

    encryptor = DataKeyEncryptor(key, legacy=legacy)
    sealed = encryptor.encrypt("s3cr3t", CONTEXT)
    assert sealed.startswith("d1:") and encryptor.decrypt(sealed, CONTEXT) == "s3cr3t"
    assert encryptor.decrypt(old, CONTEXT) == "from-before"
    with pytest.raises(Exception):  # noqa: B017 - another context
        encryptor.decrypt(sealed, {**CONTEXT, "variable": "var-2"})
    with pytest.raises(Exception):  # noqa: B017 - no KMS key: an old value cannot open
        DataKeyEncryptor(key).decrypt(old, CONTEXT)
    with pytest.raises(ValueError):
        decode_key(base64.b64encode(b"short").decode())
