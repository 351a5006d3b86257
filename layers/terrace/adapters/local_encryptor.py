"""Envelope encryption of sensitive values on one machine (`encryptor.Encryptor` without KMS).

Each value gets a fresh 256-bit data key: AES-GCM encrypts the value under it, and AES-GCM encrypts the data
key under the master key. The encryption context is the associated data of both, so a ciphertext decrypts
only with the context it was made with (as KMS's EncryptionContext). The master key lives in a file created
with mode 0600 in the data folder, once; losing it loses every sensitive value (back it up with the data).
"""

from __future__ import annotations

import base64
import functools
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

FORMAT = b"\x01"  # version of the layout: format | nonce | wrapped data key | nonce | ciphertext
NONCE = 12
WRAPPED_KEY = 32 + 16  # the data key and its GCM tag


class DecryptionFailed(Exception):
    """The ciphertext was not made with this key and this context, or it was altered."""


def load_or_create_key(path: Path) -> bytes:
    """The master key at `path`; created (0600, exclusively: two starting processes cannot both make one)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        key = path.read_bytes()
        if len(key) != 32:
            raise ValueError(f"{path} is not a 256-bit key ({len(key)} bytes)") from None
        return key
    key = _aesgcm().generate_key(bit_length=256)
    try:
        os.write(fd, key)
        os.fsync(fd)
    finally:
        os.close(fd)
    return key


def _associated(context: dict[str, str]) -> bytes:
    return json.dumps(context, sort_keys=True, separators=(",", ":")).encode()


def _aesgcm() -> type[AESGCM]:
    """AES-GCM (cryptography is loaded with the first key made or value sealed or opened: the API Lambda's cold
    start does without it)."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    return AESGCM


class LocalEncryptor:
    def __init__(self, key_file: Path | str | None = None, *, key: bytes | None = None) -> None:
        """The master key from `key_file` (created when missing), or given as `key` (32 bytes)."""
        if key is None:
            if key_file is None:
                raise ValueError("a key file or a key")
            key = load_or_create_key(Path(key_file))
        if len(key) != 32:
            raise ValueError(f"the master key is not a 256-bit key ({len(key)} bytes)")
        self._key = key

    @functools.cached_property
    def _master(self) -> AESGCM:
        return _aesgcm()(self._key)

    def encrypt(self, plaintext: str, context: dict[str, str]) -> str:
        aad = _associated(context)
        data_key = _aesgcm().generate_key(bit_length=256)
        key_nonce, value_nonce = os.urandom(NONCE), os.urandom(NONCE)
        wrapped = self._master.encrypt(key_nonce, data_key, aad)
        sealed = _aesgcm()(data_key).encrypt(value_nonce, plaintext.encode(), aad)
        return base64.b64encode(FORMAT + key_nonce + wrapped + value_nonce + sealed).decode()

    def decrypt(self, ciphertext: str, context: dict[str, str]) -> str:
        aad = _associated(context)
        try:
            raw = base64.b64decode(ciphertext, validate=True)
        except ValueError as exc:
            raise DecryptionFailed("not a Terrace ciphertext") from exc
        if raw[:1] != FORMAT or len(raw) < 1 + NONCE + WRAPPED_KEY + NONCE + 16:
            raise DecryptionFailed("not a Terrace ciphertext")
        at = 1
        key_nonce, at = raw[at : at + NONCE], at + NONCE
        wrapped, at = raw[at : at + WRAPPED_KEY], at + WRAPPED_KEY
        value_nonce, sealed = raw[at : at + NONCE], raw[at + NONCE :]
        from cryptography.exceptions import InvalidTag

        try:
            data_key = self._master.decrypt(key_nonce, wrapped, aad)
            return _aesgcm()(data_key).decrypt(value_nonce, sealed, aad).decode()
        except InvalidTag as exc:
            raise DecryptionFailed("the ciphertext does not match this key and context") from exc
