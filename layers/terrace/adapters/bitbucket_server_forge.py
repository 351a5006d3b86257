"""The forge port over Bitbucket Data Center's REST API 1.0 (`forge.py` lists the calls; `api-url` the server's
base URL, e.g. `https://bitbucket.example.com`), with httpx through `httpx_forge.py`: every request and every
redirect's hop under the outbound destination rules, the credential (an HTTP access token as `Authorization:
Bearer`, or `<user>:<password>` as basic authentication) only to the api-url's host, answers read within bounds.
A repository is `<PROJECT>/<repository slug>`."""

from __future__ import annotations

import ssl
from typing import Any
from urllib.parse import quote, urlencode

from terrace.adapters.bitbucket_forge import authorization, status_key
from terrace.adapters.forge import FILES_MAX, Commit, CommitStatus, ForgeAccess, ForgeError, Repository, forge_state
from terrace.adapters.httpx_forge import ForgeHttp, read
from terrace.adapters.httpx_outbound import Resolver, system_resolver
from terrace.domain.destinations import Allowance

PAGE = 500
EVENTS = ["repo:refs_changed", "pr:opened", "pr:from_ref_updated"]
COMMENT_MAX = 32_768  # characters of a pull request comment sent (a plan's summary is far shorter)


def _headers(access: ForgeAccess) -> dict[str, str]:
    return {"Accept": "application/json", "Authorization": authorization(access.token)}


def _repo(repo: str, api: str = "1.0") -> str:
    project, _, slug = repo.partition("/")
    return f"/rest/api/{api}/projects/{quote(project, safe='')}/repos/{quote(slug, safe='')}"


def _path(repo: str, *rest: str, query: dict[str, Any] | None = None) -> str:
    path = "/".join([_repo(repo), *(quote(p, safe="") for p in rest)])
    return f"{path}?{urlencode(query)}" if query else path


def _access(access: ForgeAccess) -> ForgeAccess:
    """The server's base URL, whether the api-url names it or its `/rest/api/1.0`."""
    base = access.api_url.rstrip("/").removesuffix("/rest/api/1.0").removesuffix("/rest/api/latest")
    return ForgeAccess(base, access.token, access.kind)


class BitbucketServerForge:
    def __init__(
        self, allowance: Allowance, resolver: Resolver = system_resolver, verify: ssl.SSLContext | bool = True
    ) -> None:
        self._http = ForgeHttp(_headers, allowance, resolver, verify)

    def repository(self, access: ForgeAccess, repo: str) -> Repository:
        access = _access(access)
        found = self._http.json(access, "GET", _path(repo))
        links = (found.get("links") or {}).get("self") or [{}]
        try:
            branch = self._http.json(access, "GET", _path(repo, "default-branch")).get("displayId") or "main"
        except ForgeError as exc:
            if exc.status != 404:
                raise
            branch = "main"  # an empty repository has none yet
        key = (found.get("project") or {}).get("key") or repo.partition("/")[0]
        return Repository(f"{key}/{found.get('slug') or repo.partition('/')[2]}", str(branch),
                          str(links[0].get("href") or ""))  # fmt: skip

    def create_hook(self, access: ForgeAccess, repo: str, url: str, secret: str) -> str:
        body = {"name": "Terrace", "url": url, "active": True, "events": EVENTS, "configuration": {"secret": secret}}
        return str(self._http.json(_access(access), "POST", _path(repo, "webhooks"), body)["id"])

    def delete_hook(self, access: ForgeAccess, repo: str, hook_id: str) -> None:
        try:
            self._http.json(_access(access), "DELETE", _path(repo, "webhooks", hook_id))
        except ForgeError as exc:
            if exc.status != 404:
                raise

    def commit(self, access: ForgeAccess, repo: str, ref: str) -> Commit:
        access = _access(access)
        found = self._http.json(access, "GET", _path(repo, "commits", ref))
        sha = str(found["id"])
        project, _, slug = repo.partition("/")
        html = f"{access.api_url}/projects/{quote(project, safe='')}/repos/{quote(slug, safe='')}/commits/{sha}"
        author = (found.get("author") or {}).get("slug") or (found.get("author") or {}).get("name") or ""
        return Commit(sha, str(found.get("message") or ""), html, str(author))

    def tarball(self, access: ForgeAccess, repo: str, ref: str, max_bytes: int) -> bytes:
        prefix = f"{repo.partition('/')[2]}-{ref[:12]}/"
        path = _repo(repo, "latest") + "/archive?" + urlencode({"at": ref, "format": "tgz", "prefix": prefix})
        with self._http.request(_access(access), "GET", path, None, follow=True) as answer:
            return read(answer, max_bytes, "the repository's archive")

    def changed_files(self, access: ForgeAccess, repo: str, base: str, head: str) -> list[str] | None:
        return self._changes(access, repo, "compare/changes", {"from": head, "to": base})

    def pull_files(self, access: ForgeAccess, repo: str, number: int) -> list[str] | None:
        return self._changes(access, repo, f"pull-requests/{number}/changes", {})

    def _changes(self, access: ForgeAccess, repo: str, what: str, query: dict[str, Any]) -> list[str] | None:
        names: list[str] = []
        start = 0
        for _ in range(FILES_MAX // PAGE):
            path = _path(repo, *what.split("/"), query={**query, "start": start, "limit": PAGE})
            found = self._http.json(_access(access), "GET", path)
            values = found.get("values") if isinstance(found, dict) else None
            if not isinstance(values, list):
                return None
            names += _names(values)
            if found.get("isLastPage", True) or not isinstance(found.get("nextPageStart"), int):
                return names
            start = int(found["nextPageStart"])
        return None  # more than it lists: it cannot say

    def set_status(self, access: ForgeAccess, repo: str, sha: str, status: CommitStatus) -> None:
        body = {"state": forge_state("bitbucket_server", status.state), "key": status_key(status.context),
                "name": status.context, "url": status.target_url, "description": status.description[:255]}  # fmt: skip
        self._http.json(_access(access), "POST", f"/rest/build-status/1.0/commits/{quote(sha, safe='')}", body)

    def comment(self, access: ForgeAccess, repo: str, number: int, body: str, comment_id: str | None) -> str:
        """A new comment, or that one edited: its PUT names the version it replaces, read just before."""
        text = body[:COMMENT_MAX]
        if comment_id is None:
            found = self._http.json(_access(access), "POST", _path(repo, "pull-requests", str(number), "comments"),
                                    {"text": text})  # fmt: skip
            return str(found["id"])
        path = _path(repo, "pull-requests", str(number), "comments", comment_id)
        current = self._http.json(_access(access), "GET", path)
        self._http.json(_access(access), "PUT", path, {"text": text, "version": int(current.get("version") or 0)})
        return comment_id


def _names(values: list[Any]) -> list[str]:
    names: list[str] = []
    for entry in values:
        if isinstance(entry, dict):
            found = {str(p["toString"]) for p in (entry.get("path"), entry.get("srcPath"))
                     if isinstance(p, dict) and isinstance(p.get("toString"), str)}  # fmt: skip
            names += sorted(found)
    return names
