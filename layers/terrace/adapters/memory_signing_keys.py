"""Signing keys in a dict (unit tests)."""

from __future__ import annotations

import threading

from terrace.adapters.signing_keys import SigningKey


class MemorySigningKeys:
    def __init__(self) -> None:
        self._keys: dict[str, SigningKey] = {}
        self._lock = threading.Lock()

    def load(self) -> list[SigningKey]:
        with self._lock:
            return list(self._keys.values())

    def put(self, key: SigningKey) -> None:
        with self._lock:
            self._keys[key.kid] = key

    def delete(self, kid: str) -> None:
        with self._lock:
            self._keys.pop(kid, None)
