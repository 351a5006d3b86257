"""A reversible twin of the encryptor (`encryptor.Encryptor`) for unit tests."""

from __future__ import annotations

import base64
import json


class MemoryEncryptor:
    """Not secret: only checks that callers pass the same context both ways."""

    def encrypt(self, plaintext: str, context: dict[str, str]) -> str:
        return base64.b64encode(json.dumps([plaintext, context], sort_keys=True).encode()).decode()

    def decrypt(self, ciphertext: str, context: dict[str, str]) -> str:
        plaintext, stored = json.loads(base64.b64decode(ciphertext))
        if stored != context:
            raise ValueError("encryption context mismatch")
        return str(plaintext)
