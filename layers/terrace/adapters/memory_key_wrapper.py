"""Customer keys held in memory (`key_wrapper.KeyWrapper`) for unit tests: the key file's wrapping
(`file_key_wrapper.KeyRing`) over a dict of named, versioned keys the test may rotate or destroy."""

from __future__ import annotations

import os

from terrace.adapters.file_key_wrapper import KeyRing
from terrace.adapters.key_wrapper import KeyUnavailable


class MemoryKeyWrapper(KeyRing):
    def __init__(self, keys: dict[str, list[bytes]] | None = None) -> None:
        self.keys: dict[str, list[bytes]] = keys if keys is not None else {}

    def add(self, kek_id: str) -> None:
        """A new version of `kek_id` (its first when new)."""
        self.keys.setdefault(kek_id, []).append(os.urandom(32))

    def _versions(self, kek_id: str) -> list[bytes]:
        versions = self.keys.get(kek_id)
        if not versions:
            raise KeyUnavailable(f"key {kek_id} does not exist")
        return versions
