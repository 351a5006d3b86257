"""Encryption of sensitive values: KMS with an encryption context; a reversible twin in unit tests."""

from __future__ import annotations

import base64
import json
from typing import Any, Protocol


class Encryptor(Protocol):
    def encrypt(self, plaintext: str, context: dict[str, str]) -> str: ...

    def decrypt(self, ciphertext: str, context: dict[str, str]) -> str: ...


class KmsEncryptor:
    def __init__(self, client: Any, key_id: str) -> None:
        self._client = client
        self._key_id = key_id

    def encrypt(self, plaintext: str, context: dict[str, str]) -> str:
        blob = self._client.encrypt(KeyId=self._key_id, Plaintext=plaintext.encode(), EncryptionContext=context)
        return base64.b64encode(blob["CiphertextBlob"]).decode()

    def decrypt(self, ciphertext: str, context: dict[str, str]) -> str:
        response = self._client.decrypt(CiphertextBlob=base64.b64decode(ciphertext), EncryptionContext=context)
        return bytes(response["Plaintext"]).decode()


class MemoryEncryptor:
    """Not secret: only checks that callers pass the same context both ways."""

    def encrypt(self, plaintext: str, context: dict[str, str]) -> str:
        return base64.b64encode(json.dumps([plaintext, context], sort_keys=True).encode()).decode()

    def decrypt(self, ciphertext: str, context: dict[str, str]) -> str:
        plaintext, stored = json.loads(base64.b64decode(ciphertext))
        if stored != context:
            raise ValueError("encryption context mismatch")
        return str(plaintext)
