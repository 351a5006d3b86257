"""The release index port: the body of a release mirror's index of terraform or OpenTofu versions, read by
`services/admin/tool_sync.py`. Implementation: `httpx_release_index.py` (tests give a function of their own)."""

from __future__ import annotations

from collections.abc import Callable

IndexReader = Callable[[str], bytes]  # index URL -> its body (bounded by tool_releases.INDEX_MAX)
