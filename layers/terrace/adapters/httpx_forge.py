"""The HTTP part of the forges over httpx (`github_forge.py`, `gitlab_forge.py`, `bitbucket_forge.py`,
`bitbucket_server_forge.py`, `azure_devops_forge.py`). Every request, and every hop of a
redirect, goes to a destination checked as any outbound request is (`httpx_outbound.checked_address`: the name
resolved once, every address it gives checked, the connection made to the checked address with the original Host
and TLS server name); the credential goes only to the first URL's host (a path relative to the `api-url`, or an
absolute URL the adapter derived from it: Bitbucket Cloud's archives are on its web host), never to a redirect's
other host; answers are read within bounds."""

from __future__ import annotations

import json
import ssl
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urljoin, urlsplit, urlunsplit

from terrace.adapters.forge import ForgeAccess, ForgeError
from terrace.adapters.httpx_outbound import Resolver, checked_address, system_resolver
from terrace.adapters.outbound import OutboundResponse
from terrace.domain.destinations import Allowance

JSON_MAX = 8 * 1024 * 1024  # one REST answer (a compare of many files is the largest)
REDIRECTS_MAX = 3
TIMEOUT_S = 30.0
CREDENTIAL_HEADERS = ("Authorization", "PRIVATE-TOKEN")


class ForgeHttp:
    def __init__(
        self,
        headers: Callable[[ForgeAccess], dict[str, str]],
        allowance: Allowance,
        resolver: Resolver = system_resolver,
        verify: ssl.SSLContext | bool = True,
    ) -> None:
        self._headers, self._allowance, self._resolver, self._verify = headers, allowance, resolver, verify

    def json(self, access: ForgeAccess, method: str, path: str, body: Any = None, *, follow: bool = False) -> Any:
        with self.request(access, method, path, body, follow=follow) as answer:
            raw = read(answer, JSON_MAX, f"the answer to {method} {path.split('?')[0]}")
        if not raw.strip():
            return {}
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise ForgeError(f"{method} {path.split('?')[0]}: the forge's answer is not JSON") from exc

    @contextmanager
    def request(self, access: ForgeAccess, method: str, path: str, body: Any, *, follow: bool) -> Iterator[Any]:
        import httpx  # on the first forge call, not on the API Lambda's cold start

        url = path if path.startswith(("https://", "http://")) else access.api_url.rstrip("/") + path
        origin = urlsplit(url).netloc
        headers = {**self._headers(access), "User-Agent": "Terrace"}
        content = json.dumps(body).encode() if body is not None else None
        if content is not None:
            headers["Content-Type"] = "application/json"
        with httpx.Client(follow_redirects=False, timeout=TIMEOUT_S, trust_env=False, verify=self._verify) as client:
            for _ in range(REDIRECTS_MAX + 1):
                pinned, host_header, host = self._pinned(url)
                sent = {**headers, "Host": host_header}
                if urlsplit(url).netloc != origin:  # the credential is the api-url's, never another host's
                    sent = {k: v for k, v in sent.items() if k not in CREDENTIAL_HEADERS}
                try:
                    request = client.build_request(method, pinned, content=content, headers=sent,
                                                   extensions={"sni_hostname": host})  # fmt: skip
                    answer = client.send(request, stream=True)
                except httpx.HTTPError as exc:
                    raise ForgeError(f"{method} {url.split('?')[0]}: {exc.__class__.__name__}: {exc}"[:500]) from exc
                try:
                    if follow and answer.status_code in (301, 302, 303, 307, 308) and "location" in answer.headers:
                        url = urljoin(url, answer.headers["location"])
                        method, content = "GET", None
                        continue
                    if answer.status_code >= 400:
                        detail = read(answer, 4096, "an error").decode(errors="replace")
                        raise ForgeError(f"{method} {path.split('?')[0]}: {answer.status_code} {detail[:300]}",
                                         answer.status_code)  # fmt: skip
                    yield answer
                    return
                finally:
                    answer.close()
            raise ForgeError(f"{method} {path}: more than {REDIRECTS_MAX} redirects")

    def _pinned(self, url: str) -> tuple[str, str, str]:
        checked = checked_address(url, self._allowance, self._resolver)
        if isinstance(checked, OutboundResponse):
            raise ForgeError(f"{url.split('?')[0]}: {checked.error}")
        host, address = checked
        parts = urlsplit(url)
        literal = f"[{address}]" if address.version == 6 else str(address)
        netloc = f"{literal}:{parts.port}" if parts.port else literal
        named = f"[{host}]" if ":" in host else host
        return (urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, "")),
                f"{named}:{parts.port}" if parts.port else named, host)  # fmt: skip


def read(answer: Any, max_bytes: int, what: str) -> bytes:
    declared = answer.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > max_bytes:
        raise ForgeError(f"{what} is larger than {max_bytes} bytes")
    chunks, size = [], 0
    for chunk in answer.iter_bytes():
        size += len(chunk)
        if size > max_bytes:
            raise ForgeError(f"{what} is larger than {max_bytes} bytes")
        chunks.append(chunk)
    return b"".join(chunks)
