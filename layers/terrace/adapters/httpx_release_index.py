"""The release index port (`release_index.py`) over httpx: one bounded GET of a mirror's index. The mirrors are
the operator's settings (`TERRACE_TOOL_MIRROR_TERRAFORM`, `TERRACE_TOOL_MIRROR_OPENTOFU`), never a tenant's, so an
air-gapped deployment's mirror on a private address is allowed; redirects are followed (the vendors' sites
redirect), the body is read at most `max_bytes`, the whole read at most `TIMEOUT_S` per step."""

from __future__ import annotations

import functools
import ssl

TIMEOUT_S = 60


def read_index(url: str, max_bytes: int, ca_bundle: str | None = None) -> bytes:
    """GET `url` (at most `max_bytes`); ValueError past it, httpx's errors for a failed request."""
    import httpx  # on the first sync, not on any function's cold start

    body = bytearray()
    with (
        httpx.Client(verify=_tls(ca_bundle), timeout=TIMEOUT_S, follow_redirects=True) as http,
        http.stream("GET", url) as answer,
    ):
        answer.raise_for_status()
        for chunk in answer.iter_bytes():
            body += chunk
            if len(body) > max_bytes:
                raise ValueError(f"{url} is larger than {max_bytes} bytes")
    return bytes(body)


@functools.lru_cache(maxsize=4)
def _tls(ca_bundle: str | None) -> ssl.SSLContext:
    """One TLS context per CA bundle for the process (loading a bundle costs ~90 ms; a sync reads the sums of
    dozens of releases): `ca_bundle`, else the certificates httpx trusts by default (certifi's)."""
    import certifi

    return ssl.create_default_context(cafile=ca_bundle or certifi.where())
