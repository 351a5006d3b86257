"""The forge port over Azure DevOps Services' REST API (`forge.py` lists the calls; `api-url`
`https://dev.azure.com`, `api-version=7.1`), with httpx through `httpx_forge.py`: every request and every redirect's
hop under the outbound destination rules, the credential (a personal access token, as basic authentication with an
empty user name) only to the api-url's host, answers read within bounds. A repository is
`<organization>/<project>/_git/<repository>`. Webhooks are service hook subscriptions (one per event: `git.push`,
`git.pullrequest.created`, `git.pullrequest.updated`; their ids joined by commas) posting with basic authentication
whose password is the hook's secret (`services/vcs/webhooks.py` checks it). The commit's files are the items zip,
read by `domain/bounded_zip.py` and handed on as the .tar.gz of one top-level folder every forge gives."""

from __future__ import annotations

import base64
import re
import ssl
from typing import Any
from urllib.parse import quote, urlencode

from terrace.adapters.forge import FILES_MAX, Commit, CommitStatus, ForgeAccess, ForgeError, Repository, forge_state
from terrace.adapters.httpx_forge import ForgeHttp, read
from terrace.adapters.httpx_outbound import Resolver, system_resolver
from terrace.domain.bounded_tar import ArchiveRefused
from terrace.domain.bounded_zip import zip_as_tar
from terrace.domain.destinations import Allowance

API_VERSION = "7.1"
PAGE = 1000
EVENTS = ("git.push", "git.pullrequest.created", "git.pullrequest.updated")
# an update of a pull request is delivered only when its source branch moved (not for reviewers, votes, status)
PUBLISHER_FILTERS = {"git.pullrequest.updated": {"notificationType": "PushNotification"}}
BASIC_USER = "terrace"  # the service hook's basic authentication (`services/vcs/webhooks.py: BASIC_USER`)
ENTRIES_MAX = 20_000  # the items zip of a commit (the configuration's bounds apply again to the .tar.gz)
EXPANDED_MAX = 256 * 1024 * 1024
SHA_RE = re.compile(r"^[0-9a-f]{40}\Z")
COMMENT_MAX = 150_000  # characters of a pull request comment sent (a plan's summary is far shorter)


def _headers(access: ForgeAccess) -> dict[str, str]:
    # without X-TFS-FedAuthRedirect, a refused credential is a 203 and a sign-in page rather than a 401
    return {"Accept": "application/json", "X-TFS-FedAuthRedirect": "Suppress",
            "Authorization": "Basic " + base64.b64encode(f":{access.token}".encode()).decode()}  # fmt: skip


def _parts(repo: str) -> tuple[str, str, str]:
    org, project, _, name = repo.split("/")
    return org, project, name


def _path(repo: str, *rest: str, query: dict[str, Any] | None = None) -> str:
    org, project, name = (quote(p, safe="") for p in _parts(repo))
    path = "/".join([f"/{org}/{project}/_apis/git/repositories/{name}", *(quote(p, safe="") for p in rest)])
    return f"{path}?{urlencode({**(query or {}), 'api-version': API_VERSION})}"


def _subscriptions(repo: str, *rest: str) -> str:
    org = quote(_parts(repo)[0], safe="")
    return "/".join([f"/{org}/_apis/hooks/subscriptions", *rest]) + f"?api-version={API_VERSION}"


class AzureDevOpsForge:
    def __init__(
        self, allowance: Allowance, resolver: Resolver = system_resolver, verify: ssl.SSLContext | bool = True
    ) -> None:
        self._http = ForgeHttp(_headers, allowance, resolver, verify)

    def repository(self, access: ForgeAccess, repo: str) -> Repository:
        found = self._http.json(access, "GET", _path(repo))
        branch = str(found.get("defaultBranch") or "refs/heads/main").removeprefix("refs/heads/")
        return Repository(repo, branch, str(found.get("webUrl") or ""))

    def create_hook(self, access: ForgeAccess, repo: str, url: str, secret: str) -> str:
        found = self._http.json(access, "GET", _path(repo))
        publisher = {"projectId": str((found.get("project") or {}).get("id") or ""), "repository": str(found["id"])}
        ids: list[str] = []
        try:
            for event in EVENTS:
                inputs = {**publisher, **PUBLISHER_FILTERS.get(event, {})}
                body = {"publisherId": "tfs", "eventType": event, "resourceVersion": "1.0", "consumerId": "webHooks",
                        "consumerActionId": "httpRequest", "publisherInputs": inputs,
                        "consumerInputs": {"url": url, "basicAuthUsername": BASIC_USER,
                                           "basicAuthPassword": secret}}  # fmt: skip
                ids.append(str(self._http.json(access, "POST", _subscriptions(repo), body)["id"]))
        except ForgeError:
            self.delete_hook(access, repo, ",".join(ids))
            raise
        return ",".join(ids)

    def delete_hook(self, access: ForgeAccess, repo: str, hook_id: str) -> None:
        for one in filter(None, hook_id.split(",")):
            try:
                self._http.json(access, "DELETE", _subscriptions(repo, quote(one, safe="")))
            except ForgeError as exc:
                if exc.status != 404:
                    raise

    def _sha(self, access: ForgeAccess, repo: str, ref: str) -> str:
        if SHA_RE.match(ref):
            return ref
        for kind in ("heads", "tags"):
            found = self._http.json(access, "GET", _path(repo, "refs", query={"filter": f"{kind}/{ref}",
                                                                              "peelTags": "true"}))  # fmt: skip
            for entry in found.get("value") or []:
                if isinstance(entry, dict) and entry.get("name") == f"refs/{kind}/{ref}":
                    return str(entry.get("peeledObjectId") or entry["objectId"])
        raise ForgeError(f"{repo}: no branch or tag {ref}", 404)

    def commit(self, access: ForgeAccess, repo: str, ref: str) -> Commit:
        found = self._http.json(access, "GET", _path(repo, "commits", self._sha(access, repo, ref)))
        return Commit(str(found["commitId"]), str(found.get("comment") or ""), str(found.get("remoteUrl") or ""),
                      str((found.get("author") or {}).get("email") or ""))  # fmt: skip

    def tarball(self, access: ForgeAccess, repo: str, ref: str, max_bytes: int) -> bytes:
        query = {"scopePath": "/", "recursionLevel": "full", "$format": "zip", "download": "true",
                 "versionDescriptor.version": ref, "versionDescriptor.versionType": "commit"}  # fmt: skip
        with self._http.request(access, "GET", _path(repo, "items", query=query), None, follow=True) as answer:
            raw = read(answer, max_bytes, "the repository's archive")
        try:
            return zip_as_tar(raw, f"{_parts(repo)[2]}-{ref[:12]}", entries_max=ENTRIES_MAX, expanded_max=EXPANDED_MAX)
        except ArchiveRefused as exc:
            raise ForgeError(f"the repository's archive was refused: {exc}") from exc

    def changed_files(self, access: ForgeAccess, repo: str, base: str, head: str) -> list[str] | None:
        names: list[str] = []
        for page in range(FILES_MAX // PAGE):
            query = {"baseVersion": base, "baseVersionType": "commit", "targetVersion": head,
                     "targetVersionType": "commit", "$top": PAGE, "$skip": page * PAGE}  # fmt: skip
            found = self._http.json(access, "GET", _path(repo, "diffs", "commits", query=query))
            changes = found.get("changes") if isinstance(found, dict) else None
            if not isinstance(changes, list):
                return None
            names += [str(c["item"]["path"]).lstrip("/") for c in changes if _file(c)]
            if found.get("allChangesIncluded", True) or len(changes) < PAGE:
                return names
        return None  # more than it lists: it cannot say

    def pull_files(self, access: ForgeAccess, repo: str, number: int) -> list[str] | None:
        found = self._http.json(access, "GET", _path(repo, "pullrequests", str(number)))
        head = (found.get("lastMergeSourceCommit") or {}).get("commitId")
        base = (found.get("lastMergeTargetCommit") or {}).get("commitId")
        if not isinstance(head, str) or not isinstance(base, str):
            return None
        return self.changed_files(access, repo, base, head)

    def set_status(self, access: ForgeAccess, repo: str, sha: str, status: CommitStatus) -> None:
        genre, _, name = status.context.partition("/")
        body = {"state": forge_state("azure_devops", status.state), "description": status.description[:255],
                "targetUrl": status.target_url, "context": {"genre": genre, "name": name or genre}}  # fmt: skip
        self._http.json(access, "POST", _path(repo, "commits", sha, "statuses"), body)
        if status.pull_request is not None:  # the pull request's page shows its own statuses, not its commits'
            self._http.json(access, "POST", _path(repo, "pullRequests", str(status.pull_request), "statuses"), body)

    def comment(self, access: ForgeAccess, repo: str, number: int, body: str, comment_id: str | None) -> str:
        """A new thread of one comment on the pull request (its id `<thread>:<comment>`), or that comment edited."""
        text = body[:COMMENT_MAX]
        if comment_id is None:
            thread = {"comments": [{"parentCommentId": 0, "content": text, "commentType": "text"}], "status": "active"}
            found = self._http.json(access, "POST", _path(repo, "pullRequests", str(number), "threads"), thread)
            first = (found.get("comments") or [{}])[0].get("id", 1)
            return f"{found['id']}:{first}"
        thread_id, _, first = comment_id.partition(":")
        path = _path(repo, "pullRequests", str(number), "threads", thread_id, "comments", first or "1")
        self._http.json(access, "PATCH", path, {"content": text})
        return comment_id


def _file(change: Any) -> bool:
    item = change.get("item") if isinstance(change, dict) else None
    return isinstance(item, dict) and isinstance(item.get("path"), str) and not item.get("isFolder")
