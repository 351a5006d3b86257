"""The forge port over GitLab's REST API v4 (`forge.py` lists the calls; `api-url` is `https://gitlab.com/api/v4` or
a self-managed `<host>/api/v4`), with httpx through `httpx_forge.py`: every request and every redirect's hop under
the outbound destination rules, the credential (`Authorization: Bearer`, a personal, project or OAuth access token)
only to the `api-url`'s own host, answers read within bounds. A project is named by its URL-encoded path."""

from __future__ import annotations

import ssl
from typing import Any
from urllib.parse import quote, urlencode

from terrace.adapters.forge import FILES_MAX, Commit, CommitStatus, ForgeAccess, ForgeError, Repository, forge_state
from terrace.adapters.httpx_forge import ForgeHttp, read
from terrace.adapters.httpx_outbound import Resolver, system_resolver
from terrace.domain.destinations import Allowance

PAGE = 100
NOTE_MAX = 1_000_000  # GitLab's limit of a note's body


def _path(repo: str, *rest: str, query: dict[str, Any] | None = None) -> str:
    path = "/".join(["/projects", quote(repo, safe=""), *(quote(p, safe="") for p in rest)])
    return f"{path}?{urlencode(query)}" if query else path


def _headers(access: ForgeAccess) -> dict[str, str]:
    return {"Accept": "application/json", "Authorization": f"Bearer {access.token}"}


class GitLabForge:
    def __init__(
        self, allowance: Allowance, resolver: Resolver = system_resolver, verify: ssl.SSLContext | bool = True
    ) -> None:
        self._http = ForgeHttp(_headers, allowance, resolver, verify)

    def repository(self, access: ForgeAccess, repo: str) -> Repository:
        found = self._http.json(access, "GET", _path(repo))
        return Repository(str(found.get("path_with_namespace") or repo), str(found.get("default_branch") or "main"),
                          str(found.get("web_url") or ""), str(found.get("http_url_to_repo") or ""))  # fmt: skip

    def create_hook(self, access: ForgeAccess, repo: str, url: str, secret: str) -> str:
        body = {"url": url, "token": secret, "push_events": True, "tag_push_events": True,
                "merge_requests_events": True, "enable_ssl_verification": True}  # fmt: skip
        return str(self._http.json(access, "POST", _path(repo, "hooks"), body)["id"])

    def delete_hook(self, access: ForgeAccess, repo: str, hook_id: str) -> None:
        try:
            self._http.json(access, "DELETE", _path(repo, "hooks", hook_id))
        except ForgeError as exc:
            if exc.status != 404:
                raise

    def commit(self, access: ForgeAccess, repo: str, ref: str) -> Commit:
        found = self._http.json(access, "GET", _path(repo, "repository", "commits", ref))
        # GitLab names a commit's author, not the account: the sender of the delivery is the one shown
        return Commit(str(found["id"]), str(found.get("message") or ""), str(found.get("web_url") or ""), "")

    def tarball(self, access: ForgeAccess, repo: str, ref: str, max_bytes: int) -> bytes:
        path = _path(repo, "repository", "archive.tar.gz", query={"sha": ref})
        with self._http.request(access, "GET", path, None, follow=True) as answer:
            return read(answer, max_bytes, "the repository's archive")

    def changed_files(self, access: ForgeAccess, repo: str, base: str, head: str) -> list[str] | None:
        found = self._http.json(access, "GET", _path(repo, "repository", "compare", query={"from": base, "to": head}))
        diffs = found.get("diffs") if isinstance(found, dict) else None
        if not isinstance(diffs, list) or found.get("overflow") is True or len(diffs) >= FILES_MAX:
            return None  # GitLab cut the comparison short: it cannot say
        return _names(diffs)

    def pull_files(self, access: ForgeAccess, repo: str, number: int) -> list[str] | None:
        names: list[str] = []
        for page in range(1, FILES_MAX // PAGE + 1):
            path = _path(repo, "merge_requests", str(number), "diffs", query={"page": page, "per_page": PAGE})
            try:
                found = self._http.json(access, "GET", path)
            except ForgeError as exc:
                if exc.status == 404 and page == 1:
                    return None  # GitLab before 15.7 has no `diffs`: it cannot say
                raise
            if not isinstance(found, list):
                return None
            names += _names(found)
            if len(found) < PAGE:
                return names
        return None

    def set_status(self, access: ForgeAccess, repo: str, sha: str, status: CommitStatus) -> None:
        body = {"state": forge_state("gitlab", status.state), "name": status.context,
                "description": status.description[:140], "target_url": status.target_url}  # fmt: skip
        self._http.json(access, "POST", _path(repo, "statuses", sha), body)

    def comment(self, access: ForgeAccess, repo: str, number: int, body: str, comment_id: str | None) -> str:
        sent = {"body": body[:NOTE_MAX]}
        if comment_id is None:
            return str(self._http.json(access, "POST", _path(repo, "merge_requests", str(number), "notes"), sent)["id"])
        self._http.json(access, "PUT", _path(repo, "merge_requests", str(number), "notes", comment_id), sent)
        return comment_id


def _names(diffs: list[Any]) -> list[str]:
    names: list[str] = []
    for entry in diffs:
        if isinstance(entry, dict):
            found = {str(entry[k]) for k in ("new_path", "old_path") if isinstance(entry.get(k), str)}
            names += sorted(found)
    return names
