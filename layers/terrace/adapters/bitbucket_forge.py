"""The forge port over Bitbucket Cloud's REST API 2.0 (`forge.py` lists the calls; `api-url`
`https://api.bitbucket.org/2.0`), with httpx through `httpx_forge.py`: every request and every redirect's hop under
the outbound destination rules, answers read within bounds. The credential is an access token (`Authorization:
Bearer`), or `<user>:<app password or API token>` (basic authentication); it goes to the api-url's host and to the
web host the archive is on (the api-url's without `api.` and `/2.0`), never to a redirect's other host. A
repository is `<workspace>/<repository>`."""

from __future__ import annotations

import base64
import hashlib
import ssl
from typing import Any
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

from terrace.adapters.forge import FILES_MAX, Commit, CommitStatus, ForgeAccess, ForgeError, Repository, forge_state
from terrace.adapters.httpx_forge import ForgeHttp, read
from terrace.adapters.httpx_outbound import Resolver, system_resolver
from terrace.domain.destinations import Allowance

PAGE = 500  # diffstat entries per page (Bitbucket's largest `pagelen`)
EVENTS = ["repo:push", "pullrequest:created", "pullrequest:updated"]
KEY_CHARS = 40
COMMENT_MAX = 32_768  # characters of a pull request comment's Markdown sent (a plan's summary is far shorter)


def authorization(token: str) -> str:
    """`user:secret` as basic authentication, else a bearer token (Bitbucket Cloud and Data Center alike)."""
    if ":" in token:
        return "Basic " + base64.b64encode(token.encode()).decode()
    return f"Bearer {token}"


def status_key(context: str) -> str:
    """A build status's `key` for a context (`Terrace/<org>/<workspace>`): stable, short, one per workspace."""
    return "terrace-" + hashlib.sha256(context.encode()).hexdigest()[: KEY_CHARS - 8]


def _headers(access: ForgeAccess) -> dict[str, str]:
    return {"Accept": "application/json", "Authorization": authorization(access.token)}


def _path(repo: str, *rest: str, query: dict[str, Any] | None = None) -> str:
    workspace, _, slug = repo.partition("/")
    path = "/".join(["/repositories", quote(workspace, safe=""), quote(slug, safe=""),
                     *(quote(p, safe="") for p in rest)])  # fmt: skip
    return f"{path}?{urlencode(query)}" if query else path


def web_url(api_url: str) -> str:
    """`https://api.bitbucket.org/2.0` -> `https://bitbucket.org` (a look-alike's `<host>/2.0` -> `<host>`)."""
    parts = urlsplit(api_url.rstrip("/"))
    netloc = parts.netloc.removeprefix("api.")
    return urlunsplit((parts.scheme, netloc, parts.path.removesuffix("/2.0"), "", ""))


class BitbucketForge:
    def __init__(
        self, allowance: Allowance, resolver: Resolver = system_resolver, verify: ssl.SSLContext | bool = True
    ) -> None:
        self._http = ForgeHttp(_headers, allowance, resolver, verify)

    def repository(self, access: ForgeAccess, repo: str) -> Repository:
        found = self._http.json(access, "GET", _path(repo))
        branch = (found.get("mainbranch") or {}).get("name") or "main"
        html = ((found.get("links") or {}).get("html") or {}).get("href") or ""
        return Repository(str(found.get("full_name") or repo), str(branch), str(html))

    def create_hook(self, access: ForgeAccess, repo: str, url: str, secret: str) -> str:
        body = {"description": "Terrace", "url": url, "active": True, "secret": secret, "events": EVENTS}
        return str(self._http.json(access, "POST", _path(repo, "hooks"), body)["uuid"])

    def delete_hook(self, access: ForgeAccess, repo: str, hook_id: str) -> None:
        try:
            self._http.json(access, "DELETE", _path(repo, "hooks", hook_id))
        except ForgeError as exc:
            if exc.status != 404:
                raise

    def commit(self, access: ForgeAccess, repo: str, ref: str) -> Commit:
        found = self._http.json(access, "GET", _path(repo, "commit", ref))
        user = (found.get("author") or {}).get("user") or {}
        html = ((found.get("links") or {}).get("html") or {}).get("href") or ""
        return Commit(str(found["hash"]), str(found.get("message") or ""), str(html), str(user.get("nickname") or ""))

    def tarball(self, access: ForgeAccess, repo: str, ref: str, max_bytes: int) -> bytes:
        workspace, _, slug = repo.partition("/")
        url = f"{web_url(access.api_url)}/{quote(workspace, safe='')}/{quote(slug, safe='')}/get/{quote(ref, safe='')}"
        with self._http.request(access, "GET", url + ".tar.gz", None, follow=True) as answer:
            return read(answer, max_bytes, "the repository's archive")

    def changed_files(self, access: ForgeAccess, repo: str, base: str, head: str) -> list[str] | None:
        names: list[str] = []
        for page in range(1, FILES_MAX // PAGE + 1):
            path = _path(repo, "diffstat", f"{head}..{base}", query={"pagelen": PAGE, "page": page})
            found = self._http.json(access, "GET", path)
            values = found.get("values") if isinstance(found, dict) else None
            if not isinstance(values, list):
                return None
            names += _names(values)
            if not found.get("next"):
                return names
        return None  # more than it lists: it cannot say

    def pull_files(self, access: ForgeAccess, repo: str, number: int) -> list[str] | None:
        found = self._http.json(access, "GET", _path(repo, "pullrequests", str(number)))
        head = ((found.get("source") or {}).get("commit") or {}).get("hash")
        base = ((found.get("destination") or {}).get("commit") or {}).get("hash")
        if not isinstance(head, str) or not isinstance(base, str):
            return None
        return self.changed_files(access, repo, base, head)

    def set_status(self, access: ForgeAccess, repo: str, sha: str, status: CommitStatus) -> None:
        body = {"key": status_key(status.context), "state": forge_state("bitbucket", status.state),
                "name": status.context, "url": status.target_url, "description": status.description[:255]}  # fmt: skip
        self._http.json(access, "POST", _path(repo, "commit", sha, "statuses", "build"), body)

    def comment(self, access: ForgeAccess, repo: str, number: int, body: str, comment_id: str | None) -> str:
        sent = {"content": {"raw": body[:COMMENT_MAX]}}
        if comment_id is None:
            found = self._http.json(access, "POST", _path(repo, "pullrequests", str(number), "comments"), sent)
            return str(found["id"])
        self._http.json(access, "PUT", _path(repo, "pullrequests", str(number), "comments", comment_id), sent)
        return comment_id


def _names(values: list[Any]) -> list[str]:
    names: list[str] = []
    for entry in values:
        if isinstance(entry, dict):
            found = {str(side["path"]) for side in (entry.get("new"), entry.get("old"))
                     if isinstance(side, dict) and isinstance(side.get("path"), str)}  # fmt: skip
            names += sorted(found)
    return names
