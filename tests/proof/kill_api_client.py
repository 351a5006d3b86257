"""The proofs' client of a killed-and-restarted server: httpx with its CA and the admin token, a 429 waited out."""

from __future__ import annotations

import ssl
import time
from dataclasses import dataclass
from typing import Any

import httpx

JSONAPI = "application/vnd.api+json"


@dataclass(frozen=True)
class Info:
    url: str
    hostname: str
    token: str
    organization: str
    ca_bundle: str
    cli_config: str


class Client:
    """An httpx client of the server (its CA, the admin token), honouring 429 as go-tfe does."""

    def __init__(self, info: Info, timeout: float = 30) -> None:
        self.info = info
        self.http = httpx.Client(
            base_url=info.url,
            verify=ssl.create_default_context(cafile=info.ca_bundle),
            timeout=timeout,
            headers={"Authorization": f"Bearer {info.token}", "Accept": JSONAPI},
        )
        # signed blob URLs (uploads, downloads) carry no token
        self.blobs = httpx.Client(verify=ssl.create_default_context(cafile=info.ca_bundle), timeout=timeout)

    def request(self, method: str, path: str, body: Any = None, expect: int | None = 200, **kw: Any) -> httpx.Response:
        if body is not None:
            kw = {**kw, "json": body, "headers": {"Content-Type": JSONAPI, **kw.get("headers", {})}}
        for _ in range(50):
            response = self.http.request(method, path, **kw)
            if response.status_code != 429:
                break
            time.sleep(float(response.headers.get("X-RateLimit-Reset") or 0.1))
        if expect is not None:
            assert response.status_code == expect, f"{method} {path}: {response.status_code} {response.text}"
        return response

    def close(self) -> None:
        self.http.close()
        self.blobs.close()
