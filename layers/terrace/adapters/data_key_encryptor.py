"""The encryptor on AWS without a customer-managed KMS key: AES-GCM envelopes (`local_encryptor.py`) under a
256-bit master key the stack keeps in an SSM SecureString parameter (encrypted at rest by the account's
AWS-managed `aws/ssm` key, read once per container by the functions that may). Why this holds and what it gives
up next to a KMS key: docs/aws/secrets.md.

Its ciphertexts start with `d1:` (base64 never holds a colon). A deployment that kept a KMS key from before
(`terrace:kmsKey`) still opens the values sealed under it: anything without the prefix goes to `legacy`.
"""

from __future__ import annotations

import base64
import binascii

from terrace.adapters.encryptor import Encryptor
from terrace.adapters.local_encryptor import DecryptionFailed, LocalEncryptor

PREFIX = "d1:"


def decode_key(encoded: str) -> bytes:
    """The 32 bytes of a base64 key as the stack stores it; a clear error for anything else."""
    try:
        key = base64.b64decode(encoded.strip(), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError("the data key parameter is not base64") from exc
    if len(key) != 32:
        raise ValueError(f"the data key parameter holds {len(key)} bytes, not 32")
    return key


class DataKeyEncryptor:
    def __init__(self, key: bytes, legacy: Encryptor | None = None) -> None:
        self._sealer = LocalEncryptor(key=key)
        self._legacy = legacy

    def encrypt(self, plaintext: str, context: dict[str, str]) -> str:
        return PREFIX + self._sealer.encrypt(plaintext, context)

    def decrypt(self, ciphertext: str, context: dict[str, str]) -> str:
        if ciphertext.startswith(PREFIX):
            return self._sealer.decrypt(ciphertext.removeprefix(PREFIX), context)
        if self._legacy is None:
            raise DecryptionFailed("not sealed with this deployment's data key (and no KMS key is configured)")
        return self._legacy.decrypt(ciphertext, context)
