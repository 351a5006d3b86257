"""The agent's envelope encryption of a Hold Your Own Key workspace's artifacts (its state and saved plans).

A data key (256 random bits) is made on the agent, wrapped by the customer's key through the key wrapper the agent
was started with (`adapters/key_wrapper.py`: AWS KMS as the customer's role, or the agent host's key file) and
sealed with AES-256-GCM: `MAGIC | nonce (12) | ciphertext+tag`, the artifact's context (workspace, purpose) as
associated data, so a blob moved to another workspace or used as another kind of artifact does not open. Terrace's
server stores the sealed blob and the wrapped data key; it never holds the plaintext data key.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Protocol

from terrace.domain.sanitized_state import ENVELOPE_MAGIC

MAGIC = ENVELOPE_MAGIC
NONCE = 12
DATA_KEY_BYTES = 32


class EnvelopeError(Exception):
    """The blob is not an envelope, was changed, or belongs to another context (the message says which)."""


class WrappedKey(Protocol):
    ciphertext: str
    key_version: str


class KeyWrapping(Protocol):
    """What the agent needs of `adapters/key_wrapper.KeyWrapper` (the customer key is the wrapper's argument)."""

    def wrap(self, key: Any, plaintext: bytes, context: dict[str, str]) -> WrappedKey: ...

    def unwrap(self, key: Any, ciphertext: str, context: dict[str, str]) -> bytes: ...


@dataclass(frozen=True)
class DataKey:
    plaintext: bytes
    wrapped: str  # what the server stores (an encrypted data key's `encrypted-dek`)
    key_version: str  # the customer key's version that wrapped it, as the key service names it
    context: dict[str, str]


def _aad(context: dict[str, str]) -> bytes:
    return json.dumps(context, sort_keys=True, separators=(",", ":")).encode()


def new_data_key(wrapper: KeyWrapping, key: Any, context: dict[str, str]) -> DataKey:
    plaintext = os.urandom(DATA_KEY_BYTES)
    wrapped = wrapper.wrap(key, plaintext, context)
    return DataKey(plaintext, wrapped.ciphertext, wrapped.key_version, dict(context))


def open_data_key(wrapper: KeyWrapping, key: Any, wrapped: str, context: dict[str, str]) -> bytes:
    plaintext = wrapper.unwrap(key, wrapped, context)
    if len(plaintext) != DATA_KEY_BYTES:
        raise EnvelopeError("the customer's key unwrapped something that is not a 256-bit data key")
    return plaintext


def seal(data_key: bytes, plaintext: bytes, context: dict[str, str]) -> bytes:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    nonce = os.urandom(NONCE)
    return MAGIC + nonce + AESGCM(data_key).encrypt(nonce, plaintext, _aad(context))


def is_sealed(blob: bytes) -> bool:
    return blob.startswith(MAGIC)


def unseal(data_key: bytes, blob: bytes, context: dict[str, str]) -> bytes:
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    if not is_sealed(blob) or len(blob) < len(MAGIC) + NONCE + 16:
        raise EnvelopeError("the artifact is not encrypted with a HYOK data key")
    body = blob[len(MAGIC) :]
    try:
        return AESGCM(data_key).decrypt(body[:NONCE], body[NONCE:], _aad(context))
    except InvalidTag as exc:
        raise EnvelopeError(
            "the artifact does not decrypt with its data key: it was changed, or belongs to another workspace"
        ) from exc
