"""What a blob holds must be what was recorded when it was finalized (a state version's md5 and size, a finished
plan's file and JSON): readers check the object's ETag (its MD5) and size against the record before they serve or
use it, so an object replaced behind the record's back (a replayed upload URL on a store that cannot refuse one)
is refused, never served."""

from __future__ import annotations

from terrace.adapters.blobs import BlobInfo, BlobStore
from terrace.domain.errors import Conflict


def md5_of(info: BlobInfo) -> str | None:
    """The object's MD5 when its ETag is one (a single-part upload, SSE-S3; a multipart ETag is not)."""
    etag = info.etag.lower()
    return etag if len(etag) == 32 and all(c in "0123456789abcdef" for c in etag) else None


def matches(info: BlobInfo | None, md5: str | None, size: int | None) -> bool:
    if info is None:
        return False
    return (md5 is None or info.etag.lower() == md5.lower()) and (size is None or info.size == int(size))


def require_recorded(blobs: BlobStore, key: str, md5: str | None, size: int | None, what: str) -> BlobInfo:
    """The object's info when it still is what was recorded; else Conflict (409), nothing served."""
    info = blobs.head(key)
    if info is None or not matches(info, md5, size):
        raise Conflict(f"the stored {what} does not match its record (md5 {md5}, {size} bytes); it is not served")
    return info
