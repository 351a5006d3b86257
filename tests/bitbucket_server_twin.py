"""The Bitbucket Data Center twin (`bitbucket_twin.py` has the Cloud twin and what both share): the REST API 1.0
calls Terrace makes below `/rest/api/1.0/projects/{p}/repos/{r}` over the twins' real git repositories, each held to
Atlassian's published description (`bitbucket_contract.py`), and webhook deliveries as Data Center sends them
(`X-Request-Id`, `X-Hub-Signature`). A pull request's comment keeps a version, which an edit must name (409
otherwise)."""

from __future__ import annotations

import re
import subprocess
import uuid
from typing import Any

from bitbucket_contract import SERVER_CALLS, payload
from bitbucket_twin import Answer, _BitbucketTwin, _json
from forge_twin import ZERO, git


class BitbucketServerTwin(_BitbucketTwin):
    calls_spec = SERVER_CALLS
    api_prefix = ""

    def __enter__(self) -> BitbucketServerTwin:
        super().__enter__()
        self.api_url = self.http_url
        return self

    def _delivery_headers(self, hook_id: str, delivery: str | None) -> dict[str, str]:
        return {"X-Request-Id": delivery or str(uuid.uuid4()), "User-Agent": "Atlassian HttpClient 4.0"}

    def _repository(self, full_name: str) -> dict[str, Any]:  # type: ignore[override]
        key, slug = full_name.split("/")
        return {"slug": slug, "id": 84, "name": slug, "scmId": "git", "state": "AVAILABLE", "forkable": True,
                "project": {"key": key, "id": 1, "name": key, "public": False, "type": "NORMAL"},
                "links": {"self": [{"href": f"{self.http_url}/projects/{key}/repos/{slug}/browse"}]}}  # fmt: skip

    @staticmethod
    def _actor() -> dict[str, Any]:
        return {"name": "octocat", "emailAddress": "octocat@forge.test", "id": 1, "displayName": "Octo Cat",
                "active": True, "slug": "octocat", "type": "NORMAL"}  # fmt: skip

    def push_payload(self, full_name: str, branch: str, before: str, after: str) -> dict[str, Any]:
        change = {"ref": {"id": f"refs/heads/{branch}", "displayId": branch, "type": "BRANCH"},
                  "refId": f"refs/heads/{branch}", "fromHash": before, "toHash": after,
                  "type": "ADD" if before == ZERO else "UPDATE"}  # fmt: skip
        return payload("repo:refs_changed", {"eventKey": "repo:refs_changed", "date": "2026-01-01T00:00:00+0000",
                                             "actor": self._actor(), "repository": self._repository(full_name),
                                             "changes": [change]})  # fmt: skip

    def pull_request_payload(
        self, full_name: str, number: int, head: str, head_ref: str, event: str = "pr:opened",
        head_repo: str | None = None, previous: str | None = None,
    ) -> dict[str, Any]:  # fmt: skip
        repo = self.repos[full_name]
        base = self._rev(repo, "refs/heads/main")
        repo.pulls[number] = (base, head)
        pr = {"id": number, "version": 1, "title": "a change", "state": "OPEN", "open": True, "closed": False,
              "createdDate": 1767225600000, "updatedDate": 1767225600000, "locked": False,
              "author": {"user": self._actor(), "role": "AUTHOR"}, "reviewers": [], "participants": [],
              "fromRef": {"id": f"refs/heads/{head_ref}", "displayId": head_ref, "latestCommit": head,
                          "repository": self._repository(head_repo or full_name)},
              "toRef": {"id": "refs/heads/main", "displayId": "main", "latestCommit": base,
                        "repository": self._repository(full_name)},
              "links": {"self": [{"href": f"{self.http_url}/projects/{full_name.split('/')[0]}/repos/"
                                          f"{full_name.split('/')[1]}/pull-requests/{number}"}]}}  # fmt: skip
        extra = {"previousFromHash": previous or base} if event == "pr:from_ref_updated" else {}
        return payload(event, {"eventKey": event, "date": "2026-01-01T00:00:00+0000", "actor": self._actor(),
                               "pullRequest": pr, **extra})  # fmt: skip

    def _answer(self, method: str, path: str, query: dict[str, str], named: dict[str, str], body: Any) -> Answer:
        if path.startswith("/rest/build-status/"):
            repo = next((r for r in self.repos.values() if self._rev(r, named["commitId"])), None)
            if repo is None:
                return _json(404, {"errors": [{"message": "no such commit"}]})
            with self._lock:
                repo.statuses.append((named["commitId"], body))
            return 204, {}, b""
        repo = self.repos.get(f"{named['projectKey']}/{named['repositorySlug']}")
        if repo is None:
            return _json(404, {"errors": [{"message": "Repository does not exist."}]})
        rest = re.sub(r"^/rest/api/[^/]+/projects/[^/]+/repos/[^/]+", "", path)
        if rest == "":
            return _json(200, self._repository(repo.full_name))
        if rest == "/default-branch":
            return _json(200, {"id": "refs/heads/main", "displayId": "main", "type": "BRANCH", "isDefault": True,
                               "latestCommit": self._rev(repo, "refs/heads/main")})  # fmt: skip
        if rest == "/webhooks":
            hook_id = self._next_hook
            self._next_hook += 1
            self._hook(repo, body["url"], body.get("configuration", {}).get("secret", ""), hook_id)
            return _json(201, {"id": hook_id, **{k: v for k, v in body.items() if k != "configuration"}})
        if rest.startswith("/webhooks/"):
            found = repo.hooks.pop(int(named["webhookId"]), None)
            return (204, {}, b"") if found else _json(404, {"errors": [{"message": "No webhook"}]})
        if rest.startswith("/commits/"):
            sha = self._rev(repo, named["commitId"])
            if not sha:
                return _json(404, {"errors": [{"message": "Commit does not exist"}]})
            message = git("log", "-1", "--format=%B", sha, cwd=repo.bare)
            return _json(200, {"id": sha, "displayId": sha[:11], "message": message, "author": self._actor(),
                               "authorTimestamp": 1767225600000, "parents": []})  # fmt: skip
        if rest == "/archive":
            sha = self._rev(repo, query.get("at") or "refs/heads/main")
            archive = subprocess.run(["git", "archive", "--format=tar.gz", f"--prefix={query.get('prefix', '')}", sha],
                                     cwd=repo.bare, capture_output=True, timeout=30, check=True).stdout  # fmt: skip
            return 200, {"Content-Type": "application/octet-stream"}, archive
        if "/comments" in rest:
            comment_id = named.get("commentId")
            current = self.comment_versions.get(int(comment_id)) if comment_id else None
            if method == "PUT" and current is not None and current != body["version"]:
                stale = "You are attempting to modify a comment based on out-of-date information."
                return _json(409, {"errors": [{"message": stale, "currentVersion": current}]})
            text = body["text"] if body else None
            found = self._comment(repo, int(named["pullRequestId"]), comment_id, text)
            if found is None:
                return _json(404, {"errors": [{"message": "Comment does not exist"}]})
            return _json(201 if method == "POST" else 200, {"id": found[0], "text": found[1], "author": self._actor(),
                                                           "version": self.comment_versions[found[0]]})  # fmt: skip
        if rest == "/compare/changes" or rest.endswith("/changes"):
            if rest == "/compare/changes":
                base, head = self._rev(repo, query["to"]), self._rev(repo, query["from"])
            elif int(named["pullRequestId"]) in repo.pulls:
                base, head = repo.pulls[int(named["pullRequestId"])]
            else:
                return _json(404, {"errors": [{"message": "No pull request"}]})
            names = self._changed(repo, base, head)
            start, limit = int(query.get("start", 0)), int(query.get("limit", 25))
            values = [{"path": {"toString": n, "name": n.rsplit("/", 1)[-1]}, "type": "MODIFY"}
                      for n in names[start : start + limit]]  # fmt: skip
            last = start + limit >= len(names)
            return _json(200, {"size": len(values), "limit": limit, "start": start, "isLastPage": last,
                               "values": values, **({} if last else {"nextPageStart": start + limit})})  # fmt: skip
        return _json(404, {"errors": [{"message": "not found"}]})
