"""The forge port over GitHub's REST API (`forge.py` lists the calls), with httpx. Every request, and every hop of
a redirect, goes to a destination checked as any outbound request is (`httpx_outbound.checked_address`: the name
resolved once, every address it gives checked, the connection made to the checked address with the original Host
and TLS server name); the credential goes only to the `api-url`'s own host; answers are read within bounds."""

from __future__ import annotations

import json
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote, urljoin, urlsplit, urlunsplit

from terrace.adapters.forge import FILES_MAX, Commit, CommitStatus, ForgeAccess, ForgeError, Repository
from terrace.adapters.httpx_outbound import Resolver, checked_address, system_resolver
from terrace.adapters.outbound import OutboundResponse
from terrace.domain.destinations import Allowance

JSON_MAX = 8 * 1024 * 1024  # one REST answer (a compare of many files is the largest)
REDIRECTS_MAX = 3
TIMEOUT_S = 30.0
HEADERS = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28", "User-Agent": "Terrace"}


def _path(repo: str, *rest: str) -> str:
    owner, _, name = repo.partition("/")
    return "/".join(["/repos", quote(owner, safe=""), quote(name, safe=""), *(quote(p, safe="") for p in rest)])


class GitHubForge:
    def __init__(
        self, allowance: Allowance, resolver: Resolver = system_resolver, verify: ssl.SSLContext | bool = True
    ) -> None:
        self._allowance, self._resolver, self._verify = allowance, resolver, verify

    # the calls -------------------------------------------------------------------------
    def repository(self, access: ForgeAccess, repo: str) -> Repository:
        found = self._json(access, "GET", _path(repo))
        return Repository(str(found.get("full_name") or repo), str(found.get("default_branch") or "main"),
                          str(found.get("html_url") or ""))  # fmt: skip

    def create_hook(self, access: ForgeAccess, repo: str, url: str, secret: str) -> str:
        body = {"name": "web", "active": True, "events": ["push", "pull_request"],
                "config": {"url": url, "content_type": "json", "secret": secret, "insecure_ssl": "0"}}  # fmt: skip
        return str(self._json(access, "POST", _path(repo, "hooks"), body)["id"])

    def delete_hook(self, access: ForgeAccess, repo: str, hook_id: str) -> None:
        try:
            self._json(access, "DELETE", _path(repo, "hooks", hook_id))
        except ForgeError as exc:
            if exc.status != 404:
                raise

    def commit(self, access: ForgeAccess, repo: str, ref: str) -> Commit:
        found = self._json(access, "GET", _path(repo, "commits", ref))
        author = (found.get("author") or {}).get("login") or ""
        message = ((found.get("commit") or {}).get("message")) or ""
        return Commit(str(found["sha"]), str(message), str(found.get("html_url") or ""), str(author))

    def tarball(self, access: ForgeAccess, repo: str, ref: str, max_bytes: int) -> bytes:
        with self._request(access, "GET", _path(repo, "tarball", ref), None, follow=True) as answer:
            return _read(answer, max_bytes, "the repository's tarball")

    def changed_files(self, access: ForgeAccess, repo: str, base: str, head: str) -> list[str] | None:
        found = self._json(access, "GET", _path(repo, "compare", f"{base}...{head}"))
        files = found.get("files")
        if not isinstance(files, list) or len(files) >= 300:  # GitHub lists at most 300 files of a comparison
            return None
        return _names(files)

    def pull_files(self, access: ForgeAccess, repo: str, number: int) -> list[str] | None:
        names: list[str] = []
        for page in range(1, FILES_MAX // 100 + 1):
            found = self._json(access, "GET", _path(repo, "pulls", str(number), "files") + f"?per_page=100&page={page}")
            if not isinstance(found, list):
                return None
            names += _names(found)
            if len(found) < 100:
                return names
        return None

    def set_status(self, access: ForgeAccess, repo: str, sha: str, status: CommitStatus) -> None:
        body = {"state": status.state, "context": status.context, "description": status.description[:140],
                "target_url": status.target_url}  # fmt: skip
        self._json(access, "POST", _path(repo, "statuses", sha), body)

    # HTTP ------------------------------------------------------------------------------
    def _json(self, access: ForgeAccess, method: str, path: str, body: Any = None) -> Any:
        with self._request(access, method, path, body, follow=False) as answer:
            raw = _read(answer, JSON_MAX, f"the answer to {method} {path.split('?')[0]}")
        if not raw.strip():
            return {}
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise ForgeError(f"{method} {path.split('?')[0]}: the forge's answer is not JSON") from exc

    @contextmanager
    def _request(self, access: ForgeAccess, method: str, path: str, body: Any, *, follow: bool) -> Iterator[Any]:
        import httpx  # on the first forge call, not on the API Lambda's cold start

        url = access.api_url.rstrip("/") + path
        origin = urlsplit(url).netloc
        headers = {**HEADERS, "Authorization": f"Bearer {access.token}"}
        content = json.dumps(body).encode() if body is not None else None
        if content is not None:
            headers["Content-Type"] = "application/json"
        with httpx.Client(follow_redirects=False, timeout=TIMEOUT_S, trust_env=False, verify=self._verify) as client:
            for _ in range(REDIRECTS_MAX + 1):
                pinned, host_header, host = self._pinned(url)
                sent = {**headers, "Host": host_header}
                if urlsplit(url).netloc != origin:
                    sent.pop("Authorization", None)  # the credential is the api-url's, never another host's
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
                        detail = _read(answer, 4096, "an error").decode(errors="replace")
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


def _read(answer: Any, max_bytes: int, what: str) -> bytes:
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


def _names(files: list[Any]) -> list[str]:
    names: list[str] = []
    for entry in files:
        if isinstance(entry, dict):
            names += [str(entry[k]) for k in ("filename", "previous_filename") if isinstance(entry.get(k), str)]
    return names
