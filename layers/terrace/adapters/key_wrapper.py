"""The key wrapper port: wrapping and unwrapping data keys with a customer's key-encryption key (Hold Your Own
Key, `services/hyok/`). The customer's key never leaves its key service; Terrace sees only wrapped data keys.
Implementations: `kms_key_wrapper.py` (AWS KMS, reached with the role of an AWS OIDC configuration and Terrace's
workload identity token), `file_key_wrapper.py` (the embedded server's stand-in for a key service: a key file the
operator keeps, named by `TERRACE_HYOK_KEY_FILE`), `memory_key_wrapper.py` (unit tests);
`tests/contract/test_key_wrapper_contract.py` is the contract.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class CustomerKey:
    """Where a customer's key is and how to reach it."""

    kek_id: str  # a KMS key id, ARN or alias; a key name of the key file
    oidc_kind: str  # the OIDC configuration's kind: aws, azure, gcp, vault
    kms_options: dict[str, str] = field(default_factory=dict)  # key-region (AWS), key-location, key-ring-id (GCP)
    oidc: dict[str, str] = field(default_factory=dict)  # the OIDC configuration's attributes (role-arn, ...)
    web_identity_token: str = field(default="", repr=False)  # Terrace's workload identity token for it


@dataclass(frozen=True)
class Wrapped:
    ciphertext: str  # the wrapped data key, base64 (or a prefixed base64)
    key_version: str  # the version of the customer's key that wrapped it, as its key service names it


class KeyUnavailable(Exception):
    """The customer's key could not be reached or refused the operation (the message says why, for the user)."""


class KeyWrapper(Protocol):
    def wrap(self, key: CustomerKey, plaintext: bytes, context: dict[str, str]) -> Wrapped: ...

    def unwrap(self, key: CustomerKey, ciphertext: str, context: dict[str, str]) -> bytes: ...
