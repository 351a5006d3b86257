"""The embedded server's customer keys (`key_wrapper.KeyWrapper`): a JSON key file the operator keeps outside the
data folder, named by `TERRACE_HYOK_KEY_FILE`: `{"keys": {"<kek-id>": ["<base64 256-bit key>", ...]}}`, the last
key of a name its current version (append one to rotate; replace one with `null` to destroy it, and with it every
data key it wrapped: versions are numbered by their place in the list).
A data key is wrapped with AES-GCM under that version, the encryption context and the key's name as associated
data; the wrapped form is `v<n>:<base64 nonce|ciphertext>`. The file is read on every call (a rotation or a removed
version takes effect at once); without the file no key is available.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from pathlib import Path
from typing import Any

from terrace.adapters.key_wrapper import CustomerKey, KeyUnavailable, Wrapped

NONCE = 12
MAX_FILE_BYTES = 1024 * 1024


def _aad(key: CustomerKey, context: dict[str, str]) -> bytes:
    return json.dumps({"kek": key.kek_id, **context}, sort_keys=True, separators=(",", ":")).encode()


def _aesgcm(secret: bytes) -> Any:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    return AESGCM(secret)


class KeyRing:
    """Wrapping under named, versioned 256-bit keys; where the keys come from is the subclass's (`_versions`)."""

    def _versions(self, kek_id: str) -> list[bytes]:
        raise NotImplementedError

    def wrap(self, key: CustomerKey, plaintext: bytes, context: dict[str, str]) -> Wrapped:
        versions = self._versions(key.kek_id)
        number = len(versions)
        if not versions[-1]:
            raise KeyUnavailable(f"the current version of key {key.kek_id} was destroyed")
        nonce = os.urandom(NONCE)
        sealed = _aesgcm(versions[-1]).encrypt(nonce, plaintext, _aad(key, context))
        return Wrapped(f"v{number}:" + base64.b64encode(nonce + sealed).decode(), f"{key.kek_id}/{number}")

    def unwrap(self, key: CustomerKey, ciphertext: str, context: dict[str, str]) -> bytes:
        from cryptography.exceptions import InvalidTag

        head, _, body = ciphertext.partition(":")
        versions = self._versions(key.kek_id)
        try:
            number = int(head.removeprefix("v"))
            raw = base64.b64decode(body, validate=True)
        except (ValueError, binascii.Error) as exc:
            raise KeyUnavailable("the wrapped data key is malformed") from exc
        if not head.startswith("v") or not 1 <= number <= len(versions) or len(raw) <= NONCE:
            raise KeyUnavailable(f"version {head} of key {key.kek_id} is not in the key file")
        if not versions[number - 1]:
            raise KeyUnavailable(f"version {number} of key {key.kek_id} was destroyed")
        try:
            return bytes(_aesgcm(versions[number - 1]).decrypt(raw[:NONCE], raw[NONCE:], _aad(key, context)))
        except InvalidTag as exc:
            raise KeyUnavailable(f"key {key.kek_id} did not wrap this data key (or its context differs)") from exc


def parse_keys(document: object, origin: str) -> dict[str, list[bytes]]:
    keys = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(keys, dict):
        raise KeyUnavailable(f'{origin} holds no "keys" object')
    found: dict[str, list[bytes]] = {}
    for name, versions in keys.items():
        listed = [versions] if isinstance(versions, str) else versions
        if not isinstance(listed, list) or not listed:
            raise KeyUnavailable(f"key {name} of {origin} is not a list of base64 keys")
        decoded = []
        for value in listed:
            if value is None:  # a destroyed version keeps its place
                decoded.append(b"")
                continue
            try:
                secret = base64.b64decode(str(value), validate=True)
            except (binascii.Error, ValueError) as exc:
                raise KeyUnavailable(f"a version of key {name} of {origin} is not base64") from exc
            if len(secret) != 32:
                raise KeyUnavailable(f"a version of key {name} of {origin} is not a 256-bit key")
            decoded.append(secret)
        found[str(name)] = decoded
    return found


class FileKeyWrapper(KeyRing):
    def __init__(self, path: str | Path | None) -> None:
        self._path = Path(path) if path else None

    def _versions(self, kek_id: str) -> list[bytes]:
        if self._path is None:
            raise KeyUnavailable("this server has no key file (TERRACE_HYOK_KEY_FILE): no customer key is reachable")
        try:
            with self._path.open("rb") as handle:
                raw = handle.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            raise KeyUnavailable(f"the key file cannot be read: {exc.strerror}") from exc
        if len(raw) > MAX_FILE_BYTES:
            raise KeyUnavailable("the key file is larger than 1 MiB")
        try:
            document = json.loads(raw)
        except ValueError as exc:
            raise KeyUnavailable("the key file is not JSON") from exc
        versions = parse_keys(document, "the key file").get(kek_id)
        if not versions:
            raise KeyUnavailable(f"key {kek_id} is not in the key file")
        return versions
