"""The blob storage port (S3 on AWS, S3-on-moto locally, memory in unit tests).

Large bodies never pass through the API process: clients move them with presigned URLs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class BlobInfo:
    size: int
    etag: str  # hex MD5 of the body for single-part, SSE-S3 uploads


class BlobStore(Protocol):
    def put(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None: ...

    def get(self, key: str) -> bytes: ...

    def iter_chunks(self, key: str, chunk_size: int = 1024 * 1024) -> Iterator[bytes]: ...

    def get_range(self, key: str, start: int, end: int) -> bytes:
        """Bytes [start, end) of the object (fewer at its end)."""
        ...

    def head(self, key: str) -> BlobInfo | None: ...

    def delete(self, key: str) -> None: ...

    def copy(self, source_key: str, target_key: str) -> None: ...

    def presign_put(self, key: str, ttl_s: int) -> str: ...

    def presign_get(self, key: str, ttl_s: int) -> str: ...
