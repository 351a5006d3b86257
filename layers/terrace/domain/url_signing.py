"""The one signer of Terrace's own URLs: blob URLs of the embedded server (`adapters/fs_blobs.py`) and
log-read URLs (`services/runs/logs.py`), under the URL-signing secret.

A signature is the hex HMAC-SHA256 of a purpose (`Purpose`) and the URL's parts, encoded unambiguously
(a JSON array), so a signature minted for one purpose never verifies for another (a blob GET URL's is no
blob PUT's, neither is a log-read URL's) and no part can run into the next. `verify` answers False, never
raises, for anything a client can put in a URL (non-ASCII, wrong length, another purpose's signature).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from enum import StrEnum


class Purpose(StrEnum):
    BLOB_PUT = "blob-put"
    BLOB_GET = "blob-get"
    LOG_READ = "log-read"


class UrlSigning:
    def __init__(self, secret: str) -> None:
        if not secret.strip():
            raise ValueError("signed URLs need a signing secret (TERRACE_URL_SIGNING_SECRET)")
        self._secret = secret.encode()

    def sign(self, purpose: Purpose, *parts: str | int) -> str:
        message = json.dumps(["terrace-url", str(purpose), *parts], separators=(",", ":")).encode()
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()

    def verify(self, signature: str, purpose: Purpose, *parts: str | int) -> bool:
        try:
            given = signature.encode("ascii")
        except UnicodeEncodeError:
            return False
        return hmac.compare_digest(given, self.sign(purpose, *parts).encode("ascii"))
