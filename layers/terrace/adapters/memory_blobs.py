"""In-memory twin of the blob store for unit tests."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator

from terrace.adapters.blobs import BlobInfo


class MemoryBlobs:
    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def put(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        with self._lock:
            self.objects[key] = bytes(data)

    def get(self, key: str, version: str | None = None) -> bytes:
        with self._lock:
            return self.objects[key]

    def iter_chunks(self, key: str, chunk_size: int = 1024 * 1024, version: str | None = None) -> Iterator[bytes]:
        data = self.get(key)
        for start in range(0, len(data), chunk_size):
            yield data[start : start + chunk_size]

    def get_range(self, key: str, start: int, end: int) -> bytes:
        return self.get(key)[start:end]

    def head(self, key: str) -> BlobInfo | None:
        with self._lock:
            data = self.objects.get(key)
        return None if data is None else BlobInfo(size=len(data), etag=hashlib.md5(data).hexdigest())

    def delete(self, key: str) -> None:
        with self._lock:
            self.objects.pop(key, None)

    def copy(self, source_key: str, target_key: str, source_version: str | None = None) -> str | None:
        self.put(target_key, self.get(source_key))
        return None

    def presign_put(self, key: str, ttl_s: int, exclusive: bool = False) -> str:
        return f"memory://blobs/{key}?op=put&ttl={ttl_s}"

    def presign_get(self, key: str, ttl_s: int, version: str | None = None) -> str:
        return f"memory://blobs/{key}?op=get&ttl={ttl_s}"
