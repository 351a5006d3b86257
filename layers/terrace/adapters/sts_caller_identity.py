"""`sts:GetCallerIdentity` sent as its signer signed it (the caller identity port, `caller_identity.py`), to the one
STS endpoint configured (`Settings.sts_endpoint`): the request's URL is never the caller's."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from xml.etree import ElementTree

import httpx

log = logging.getLogger("terrace.adapters.sts")
MAX_ANSWER_BYTES = 16 * 1024
NAMESPACE = "{https://sts.amazonaws.com/doc/2011-06-15/}"


class StsCallerIdentity:
    def __init__(self, url: str, transport: httpx.BaseTransport | None = None, timeout_s: float = 10.0) -> None:
        self.url = url
        self._client = httpx.Client(transport=transport, timeout=timeout_s, follow_redirects=False, trust_env=False)

    def caller_arn(self, headers: Mapping[str, str], body: str) -> str | None:
        try:
            with self._client.stream("POST", self.url, headers=dict(headers), content=body.encode()) as answer:
                content = b""
                for chunk in answer.iter_bytes():
                    content += chunk
                    if len(content) > MAX_ANSWER_BYTES:
                        log.warning("STS answered more than %d bytes", MAX_ANSWER_BYTES)
                        return None
        except httpx.HTTPError as exc:
            log.warning("STS unreachable: %s", exc)
            return None
        if answer.status_code != 200:
            log.info("STS refused a caller identity proof: HTTP %d", answer.status_code)
            return None
        try:
            arn = ElementTree.fromstring(content).find(f"{NAMESPACE}GetCallerIdentityResult/{NAMESPACE}Arn")
        except ElementTree.ParseError:
            return None
        return arn.text if arn is not None and arn.text else None
