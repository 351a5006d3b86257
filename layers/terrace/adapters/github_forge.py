"""The forge port over GitHub's REST API (`forge.py` lists the calls), with httpx through `httpx_forge.py`: every
request and every redirect's hop under the outbound destination rules, the credential only to the `api-url`'s own
host, answers read within bounds."""

from __future__ import annotations

import ssl
from typing import Any
from urllib.parse import quote

from terrace.adapters.forge import FILES_MAX, Commit, CommitStatus, ForgeAccess, ForgeError, Repository, forge_state
from terrace.adapters.httpx_forge import ForgeHttp, read
from terrace.adapters.httpx_outbound import Resolver, system_resolver
from terrace.domain.destinations import Allowance

COMMENT_MAX = 65_536  # GitHub refuses a longer comment body
HEADERS = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}


def _path(repo: str, *rest: str) -> str:
    owner, _, name = repo.partition("/")
    return "/".join(["/repos", quote(owner, safe=""), quote(name, safe=""), *(quote(p, safe="") for p in rest)])


def _headers(access: ForgeAccess) -> dict[str, str]:
    return {**HEADERS, "Authorization": f"Bearer {access.token}"}


class GitHubForge:
    def __init__(
        self, allowance: Allowance, resolver: Resolver = system_resolver, verify: ssl.SSLContext | bool = True
    ) -> None:
        self._http = ForgeHttp(_headers, allowance, resolver, verify)

    def repository(self, access: ForgeAccess, repo: str) -> Repository:
        found = self._http.json(access, "GET", _path(repo))
        return Repository(str(found.get("full_name") or repo), str(found.get("default_branch") or "main"),
                          str(found.get("html_url") or ""), str(found.get("clone_url") or ""))  # fmt: skip

    def create_hook(self, access: ForgeAccess, repo: str, url: str, secret: str) -> str:
        body = {"name": "web", "active": True, "events": ["push", "pull_request"],
                "config": {"url": url, "content_type": "json", "secret": secret, "insecure_ssl": "0"}}  # fmt: skip
        return str(self._http.json(access, "POST", _path(repo, "hooks"), body)["id"])

    def delete_hook(self, access: ForgeAccess, repo: str, hook_id: str) -> None:
        try:
            self._http.json(access, "DELETE", _path(repo, "hooks", hook_id))
        except ForgeError as exc:
            if exc.status != 404:
                raise

    def commit(self, access: ForgeAccess, repo: str, ref: str) -> Commit:
        found = self._http.json(access, "GET", _path(repo, "commits", ref))
        author = (found.get("author") or {}).get("login") or ""
        message = ((found.get("commit") or {}).get("message")) or ""
        return Commit(str(found["sha"]), str(message), str(found.get("html_url") or ""), str(author))

    def tarball(self, access: ForgeAccess, repo: str, ref: str, max_bytes: int) -> bytes:
        with self._http.request(access, "GET", _path(repo, "tarball", ref), None, follow=True) as answer:
            return read(answer, max_bytes, "the repository's tarball")

    def changed_files(self, access: ForgeAccess, repo: str, base: str, head: str) -> list[str] | None:
        found = self._http.json(access, "GET", _path(repo, "compare", f"{base}...{head}"))
        files = found.get("files")
        if not isinstance(files, list) or len(files) >= 300:  # GitHub lists at most 300 files of a comparison
            return None
        return _names(files)

    def pull_files(self, access: ForgeAccess, repo: str, number: int) -> list[str] | None:
        names: list[str] = []
        for page in range(1, FILES_MAX // 100 + 1):
            path = _path(repo, "pulls", str(number), "files") + f"?per_page=100&page={page}"
            found = self._http.json(access, "GET", path)
            if not isinstance(found, list):
                return None
            names += _names(found)
            if len(found) < 100:
                return names
        return None

    def set_status(self, access: ForgeAccess, repo: str, sha: str, status: CommitStatus) -> None:
        body = {"state": forge_state("github", status.state), "context": status.context,
                "description": status.description[:140], "target_url": status.target_url}  # fmt: skip
        self._http.json(access, "POST", _path(repo, "statuses", sha), body)

    def comment(self, access: ForgeAccess, repo: str, number: int, body: str, comment_id: str | None) -> str:
        sent = {"body": body[:COMMENT_MAX]}
        if comment_id is None:
            return str(self._http.json(access, "POST", _path(repo, "issues", str(number), "comments"), sent)["id"])
        self._http.json(access, "PATCH", _path(repo, "issues", "comments", comment_id), sent)
        return comment_id


def _names(files: list[Any]) -> list[str]:
    names: list[str] = []
    for entry in files:
        if isinstance(entry, dict):
            names += [str(entry[k]) for k in ("filename", "previous_filename") if isinstance(entry.get(k), str)]
    return names
