"""The folder blob store's URLs (`fs_blobs.py`): `<public url>/blobs/<key>?method=…&expires=…&max=…&signature=…`, an
HMAC-SHA256 (the URL-signing secret, `domain/url_signing.py`, purpose blob PUT or blob GET) over key, expiry and size
limit, which `web/blob_urls.py` checks before it serves one."""

from __future__ import annotations

import time
from collections.abc import Callable
from urllib.parse import quote, urlencode

from terrace.domain.url_signing import Purpose, UrlSigning

URL_PREFIX = "/blobs/"


class BlobUrlRefused(Exception):
    """A blob URL that is not valid for this request: `status` is what the client gets."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status, self.detail = status, detail


_PURPOSES = {"PUT": Purpose.BLOB_PUT, "GET": Purpose.BLOB_GET}


class UrlSigner:
    def __init__(self, secret: str, base_url: str, now: Callable[[], float] = time.time) -> None:
        self._signing = UrlSigning(secret)
        self._base = base_url.rstrip("/") + URL_PREFIX.rstrip("/")
        self._now = now

    def sign(self, method: str, key: str, ttl_s: int, max_bytes: int = 0) -> str:
        expires = int(self._now()) + ttl_s
        query = {
            "method": method,
            "expires": str(expires),
            "max": str(max_bytes),
            "signature": self._signing.sign(_PURPOSES[method], key, expires, max_bytes),
        }
        return f"{self._base}/{quote(key)}?{urlencode(query)}"

    def verify(self, request_method: str, key: str, query: dict[str, str]) -> int:
        """The URL's size limit if it allows `request_method` on `key` now; else BlobUrlRefused (403)."""
        try:
            method, expires, max_bytes = query["method"], int(query["expires"]), int(query["max"])
            signature = query["signature"]
        except (KeyError, ValueError):
            raise BlobUrlRefused(403, "not a signed blob URL") from None
        purpose = _PURPOSES.get(method)
        if purpose is None or not self._signing.verify(signature, purpose, key, expires, max_bytes):
            raise BlobUrlRefused(403, "the blob URL's signature does not match")
        if request_method != method and not (request_method == "HEAD" and method == "GET"):
            raise BlobUrlRefused(403, f"this blob URL allows {method}, not {request_method}")
        if expires < self._now():
            raise BlobUrlRefused(403, "the blob URL has expired")
        return max_bytes
