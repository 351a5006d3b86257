"""The encryptor (`encryptor.Encryptor`) on KMS, with the encryption context as KMS's EncryptionContext."""

from __future__ import annotations

import base64
from typing import Any

_EMPTY = "e:"  # KMS refuses an empty plaintext: "" is sealed as a marker (base64 never holds a colon)
_EMPTY_MARKER = b"terrace:empty-value"


class KmsEncryptor:
    def __init__(self, client: Any, key_id: str) -> None:
        self._client = client
        self._key_id = key_id

    def encrypt(self, plaintext: str, context: dict[str, str]) -> str:
        raw = plaintext.encode() or _EMPTY_MARKER
        blob = self._client.encrypt(KeyId=self._key_id, Plaintext=raw, EncryptionContext=context)
        sealed = base64.b64encode(blob["CiphertextBlob"]).decode()
        return _EMPTY + sealed if not plaintext else sealed

    def decrypt(self, ciphertext: str, context: dict[str, str]) -> str:
        empty = ciphertext.startswith(_EMPTY)
        blob = base64.b64decode(ciphertext.removeprefix(_EMPTY))
        plaintext = bytes(self._client.decrypt(CiphertextBlob=blob, EncryptionContext=context)["Plaintext"])
        if empty:
            if plaintext != _EMPTY_MARKER:
                raise ValueError("not an empty-value ciphertext")
            return ""
        return plaintext.decode()
