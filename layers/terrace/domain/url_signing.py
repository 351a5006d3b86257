"""The one signer of Terrace's own URLs: blob URLs of the embedded server (`adapters/fs_blobs.py`) and
log-read URLs (`services/runs/logs.py`), under the URL-signing secret.

A signature is itsdangerous's (HMAC-SHA256, base64url), as the web session cookie's is, with a salt per purpose
(`Purpose`; the cookie's is `terrace.web-session`), over the URL's parts encoded unambiguously (a JSON array):
a signature minted for one purpose never verifies for another (a blob GET URL's is no blob PUT's, neither is a
log-read URL's nor a session cookie's) and no part can run into the next. `verify` answers False, never raises,
for anything a client can put in a URL (non-ASCII, not base64, wrong length, another purpose's signature, another
spelling of the right one).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from enum import StrEnum

from itsdangerous import Signer


class Purpose(StrEnum):
    BLOB_PUT = "blob-put"
    BLOB_GET = "blob-get"
    LOG_READ = "log-read"


SALT_PREFIX = "terrace.url."  # a purpose's salt: `terrace.url.blob-put`, ...


def _message(parts: tuple[str | int, ...]) -> bytes:
    return json.dumps(list(parts), separators=(",", ":")).encode()


class UrlSigning:
    def __init__(self, secret: str) -> None:
        if not secret.strip():
            raise ValueError("signed URLs need a signing secret (TERRACE_URL_SIGNING_SECRET)")
        self._signers = {
            purpose: Signer(secret, salt=SALT_PREFIX + purpose, digest_method=hashlib.sha256) for purpose in Purpose
        }

    def sign(self, purpose: Purpose, *parts: str | int) -> str:
        return self._signers[purpose].get_signature(_message(parts)).decode("ascii")

    def verify(self, signature: str, purpose: Purpose, *parts: str | int) -> bool:
        # The canonical string, compared in constant time: itsdangerous compares the decoded bytes, and the last
        # base64 character of a 32-byte MAC carries two unused bits, so four spellings of one signature would pass.
        return hmac.compare_digest(signature.encode("utf-8", "surrogateescape"), self.sign(purpose, *parts).encode())
