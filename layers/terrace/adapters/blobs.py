"""The blob storage port (S3 on AWS, S3-on-moto locally, memory in unit tests).

Large bodies never pass through the API process: clients move them with presigned URLs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol


class BlobDamaged(Exception):
    """The object's bytes do not match the checksum its store keeps for them (S3's, or the sidecar's MD5 on the
    embedded server): a read refuses them rather than hand them out."""


@dataclass(frozen=True)
class BlobInfo:
    size: int
    etag: str  # hex MD5 of the body for single-part, SSE-S3 uploads
    version: str | None = None  # S3's VersionId (a versioned bucket): that object version never changes


class BlobStore(Protocol):
    def put(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None: ...

    def get(self, key: str, version: str | None = None) -> bytes:
        """`version` (S3): that version of the object, whatever was written over it since."""
        ...

    def iter_chunks(self, key: str, chunk_size: int = 1024 * 1024, version: str | None = None) -> Iterator[bytes]: ...

    def get_range(self, key: str, start: int, end: int) -> bytes:
        """Bytes [start, end) of the object (fewer at its end)."""
        ...

    def head(self, key: str) -> BlobInfo | None: ...

    def delete(self, key: str) -> None: ...

    def copy(self, source_key: str, target_key: str, source_version: str | None = None) -> str | None:
        """The new object's version (S3, a versioned bucket), else None."""
        ...

    def presign_put(self, key: str, ttl_s: int, exclusive: bool = False) -> str:
        """A URL that uploads `key` once. `exclusive`: the URL also requires `If-None-Match: *` where the store
        checks it (S3 signs it in), so it never replaces an object; only Terrace's own clients (the runner)
        send that header. The embedded server's URLs never replace an object, whatever the client sends."""
        ...

    def presign_get(self, key: str, ttl_s: int, version: str | None = None) -> str: ...
