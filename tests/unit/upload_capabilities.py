"""Finding an upload capability in an answer: what a caller who may not write must never be handed.

Three signs, any one is enough:
- a field or link named like an upload (`upload`, `upload-url`, `hosted-state-upload-url`, `shasums-upload`,
  `provider-binary-upload`, ...) that holds a URL (a flag such as `shasums-uploaded`, an `uploaded-at` time or
  the OpenAPI document's schemas are not links);
- a URL the blob store would take a PUT for, by its shape: the memory store's `op=put`, the embedded store's
  `method=PUT` (its signature covers the method, `adapters/fs_blobs.py`);
- any URL the blob store's `presign_put` minted while the request was served (`minting`): S3's presigned URLs
  do not show their method (it is inside the signature), so only this sign finds them, whatever the store.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest

_UPLOAD_NAME = re.compile(r"upload", re.IGNORECASE)
_NOT_A_CAPABILITY = re.compile(r"(uploaded|uploaded-at|can-upload-asset)$", re.IGNORECASE)
_URL = re.compile(r"^([a-z][a-z0-9+.-]*://|/)", re.IGNORECASE)
_PUT_SHAPES = (
    re.compile(r"memory://blobs/[^\s\"'<>]*[?&]op=put"),  # adapters/memory_blobs.py
    re.compile(r"/blobs/[^\s\"'<>]*[?&]method=PUT\b"),  # adapters/fs_blobs.py (web/blob_urls.py)
)


def _named(value: Any, path: str = "") -> Iterator[str]:
    """Fields named like an upload that hold something (their JSON path)."""
    if isinstance(value, dict):
        for key, item in value.items():
            here = f"{path}/{key}"
            if isinstance(key, str) and _UPLOAD_NAME.search(key) and not _NOT_A_CAPABILITY.search(key):
                if isinstance(item, str) and _URL.match(item):  # a link (not a flag, a time or a schema)
                    yield f"{here}={item[:120]}"
            yield from _named(item, here)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _named(item, f"{path}/{index}")


def capabilities(body: bytes | str, minted: Sequence[str] = ()) -> list[str]:
    """Every upload capability in `body` (JSON or HTML), described."""
    text = body.decode(errors="replace") if isinstance(body, bytes) else body
    found: list[str] = []
    try:
        found += list(_named(json.loads(text)))
    except ValueError:
        pass
    plain = html.unescape(text).replace("\\/", "/")
    for shape in _PUT_SHAPES:
        found += [f"PUT URL {m.group(0)[:160]}" for m in shape.finditer(plain)]
    found += [f"minted PUT URL {url[:160]}" for url in minted if url in plain]  # whole: a GET of the key is none
    return found


@contextmanager
def minting(blobs: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The PUT URLs `blobs.presign_put` mints inside the block (cleared by the caller between requests)."""
    minted: list[str] = []
    original = blobs.presign_put

    def spy(*args: Any, **kwargs: Any) -> str:
        url: str = original(*args, **kwargs)
        minted.append(url)
        return url

    monkeypatch.setattr(blobs, "presign_put", spy)
    yield minted
