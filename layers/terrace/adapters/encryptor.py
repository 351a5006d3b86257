"""The encryptor port: sealing sensitive values (variables, SSH keys) under an encryption context; a value
decrypts only with the context it was sealed with. Implementations: `kms_encryptor.py` (KMS), `local_encryptor.py`
(AES-GCM envelopes under a key in the data folder), `memory_encryptor.py` (a reversible twin for unit tests);
`tests/contract/test_encryptor_contract.py` is the contract.
"""

from __future__ import annotations

from typing import Protocol


class Encryptor(Protocol):
    def encrypt(self, plaintext: str, context: dict[str, str]) -> str: ...

    def decrypt(self, ciphertext: str, context: dict[str, str]) -> str: ...
