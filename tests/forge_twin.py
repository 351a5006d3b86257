"""A GitHub-compatible forge twin for the tests: a small HTTP server answering the REST calls Terrace makes
(relative to `api_url`, `http://127.0.0.1:<port>/api/v3` as GitHub Enterprise Server's), over real git
repositories (`git_forge.py`: bare repositories served over git's smart HTTP protocol, tarballs by `git archive`),
and sending
webhook deliveries to the hooks Terrace registered, signed with their secrets as GitHub signs them.

Every request Terrace makes is checked against GitHub's OpenAPI document and every payload the twin sends against
GitHub's webhook schemas (`github_contract.py`): a request that is not one of the calls Terrace may make, has an
unknown query parameter or a body GitHub would refuse is answered 422 and recorded in `problems`, which a test
asserts empty. The tarball is a redirect to a second server (github.com answers with codeload's host): that one
records a problem if the credential comes along. Started and stopped by the test (`with ForgeTwin(...) as twin`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import httpx
from git_forge import ZERO, GitForge, Repo, git
from github_contract import contract
from oauth_twin import OAuthApps


class ForgeTwin(GitForge):
    def __init__(self, root: Path, token: str, ca_bundle: str | bool = True) -> None:
        super().__init__(root, token, ca_bundle)
        self.oauth = OAuthApps("github", token, problems=self.problems)  # its OAuth applications' web flow

    # deliveries --------------------------------------------------------------------------
    def deliver(
        self,
        full_name: str,
        event: str,
        payload: dict[str, Any],
        delivery: str | None = None,
        secret: str | None = None,
    ) -> list[httpx.Response]:
        """The delivery to every hook of the repository, signed with its secret (or `secret`)."""
        body = json.dumps(payload).encode()
        answers = []
        for url, hook_secret in list(self.repos[full_name].hooks.values()):
            signature = hmac.new((secret or hook_secret).encode(), body, hashlib.sha256).hexdigest()
            headers = {
                "X-GitHub-Event": event,
                "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
                "X-Hub-Signature-256": f"sha256={signature}",
                "Content-Type": "application/json",
                "User-Agent": "GitHub-Hookshot/twin",
            }
            answers.append(httpx.post(url, content=body, headers=headers, verify=self._verify, timeout=30))
        return answers

    def push_payload(self, full_name: str, ref: str, before: str, after: str) -> dict[str, Any]:
        message = git("log", "-1", "--format=%B", after, cwd=self.repos[full_name].bare)
        owner, name = full_name.split("/")
        commit = {
            "id": after,
            "tree_id": after,
            "distinct": True,
            "message": message,
            "timestamp": "2026-01-01T00:00:00Z",
            "url": f"{self.http_url}/{full_name}/commit/{after}",
            "author": {"name": "Octo Cat", "email": "octocat@forge.test"},
            "committer": {"name": "Octo Cat", "email": "octocat@forge.test"},
            "added": [],
            "removed": [],
            "modified": [],
        }
        return contract().payload(
            "push$event",
            {
                "ref": ref,
                "before": before,
                "after": after,
                "created": before == ZERO,
                "deleted": False,
                "forced": False,
                "base_ref": None,
                "compare": f"{self.http_url}/{full_name}/compare/{before[:12]}...{after[:12]}",
                "commits": [commit],
                "head_commit": commit,
                "repository": self._repository(full_name, owner, name),
                "pusher": {"name": "octocat", "email": "octocat@forge.test"},
                "sender": {"login": "octocat", "type": "User"},
            },
        )

    def pull_request_payload(
        self,
        full_name: str,
        number: int,
        head: str,
        head_ref: str,
        action: str = "opened",
        head_repo: str | None = None,
    ) -> dict[str, Any]:
        repo = self.repos[full_name]
        base_sha = self._rev(repo, "refs/heads/main")
        repo.pulls[number] = (base_sha, head)
        owner, name = full_name.split("/")
        head_owner, head_name = (head_repo or full_name).split("/")
        pr = {
            "number": number,
            "html_url": f"{self.http_url}/{full_name}/pull/{number}",
            "title": "a change",
            "state": "open",
            "head": {
                "sha": head,
                "ref": head_ref,
                "label": f"{head_owner}:{head_ref}",
                "repo": self._repository(head_repo or full_name, head_owner, head_name),
            },
            "base": {
                "sha": base_sha,
                "ref": "main",
                "label": f"{owner}:main",
                "repo": self._repository(full_name, owner, name),
            },
        }
        extra = {"before": base_sha, "after": head} if action == "synchronize" else {}
        return contract().payload(
            f"pull_request${action}",
            {
                "action": action,
                "number": number,
                "pull_request": pr,
                "repository": self._repository(full_name, owner, name),
                "sender": {"login": "octocat", "type": "User"},
                **extra,
            },
        )

    def _repository(self, full_name: str, owner: str, name: str) -> dict[str, Any]:
        return {
            "full_name": full_name,
            "name": name,
            "owner": {"login": owner, "type": "User"},
            "default_branch": "main",
            "html_url": f"{self.http_url}/{full_name}",
            "clone_url": f"{self.http_url}/git/{full_name}.git",
        }

    # the REST API ------------------------------------------------------------------------
    def _api_request(self, method: str, raw_path: str, headers: dict[str, str], body: bytes) -> Any:
        if raw_path.startswith("/git/"):
            return self._git_http(method, raw_path, headers, body)
        parts = urlsplit(raw_path)
        if self.oauth.handles(parts.path):  # github.com's own host, not the api-url
            return self.oauth.answer(method, raw_path, headers, body)
        path = unquote(parts.path).removeprefix("/api/v3")
        query = dict(parse_qsl(parts.query))
        with self._lock:
            self.calls.append(f"{method} {path}")
        problems = contract().check_request(method.lower(), path, query, body)
        if problems:
            return self._problem("; ".join(problems))
        if path.startswith(("/app/", "/installation/")):
            return self._app_request(method, path, headers.get("Authorization", ""), body)
        if not self._authorized(path, headers.get("Authorization", "")):
            return 401, {"Content-Type": "application/json"}, b'{"message": "Bad credentials"}'
        m = re.match(r"^/repos/([^/]+/[^/]+)(/.*)?$", path)
        repo = self.repos.get(m.group(1)) if m else None
        if repo is None or m is None:
            return 404, {"Content-Type": "application/json"}, b'{"message": "Not Found"}'
        return self._route(repo, method, m.group(2) or "", body)

    def _authorized(self, path: str, authorization: str) -> bool:
        """The credential may make a REST call on `path` (a GitHub App's twin adds installation tokens)."""
        return authorization == f"Bearer {self.token}"

    def _app_request(self, method: str, path: str, authorization: str, body: bytes) -> Any:
        return 404, {"Content-Type": "application/json"}, b'{"message": "Not Found"}'  # no App here

    def _route(self, repo: Repo, method: str, rest: str, body: bytes) -> Any:
        ok = {"Content-Type": "application/json"}
        if rest == "" and method == "GET":
            return (
                200,
                ok,
                json.dumps(
                    {
                        "full_name": repo.full_name,
                        "default_branch": "main",
                        "html_url": f"{self.http_url}/{repo.full_name}",
                        "clone_url": f"{self.http_url}/git/{repo.full_name}.git",  # git http-backend's
                    }
                ).encode(),
            )
        if rest == "/hooks" and method == "POST":
            config = json.loads(body)["config"]
            with self._lock:
                hook_id, self._next_hook = self._next_hook, self._next_hook + 1
                repo.hooks[hook_id] = (config["url"], config["secret"])
            return 201, ok, json.dumps({"id": hook_id, "active": True}).encode()
        if (m := re.match(r"^/hooks/(\d+)$", rest)) and method == "DELETE":
            found = repo.hooks.pop(int(m.group(1)), None)
            return (204, {}, b"") if found else (404, ok, b'{"message": "Not Found"}')
        if (m := re.match(r"^/commits/(.+)$", rest)) and method == "GET":
            sha = self._rev(repo, m.group(1))
            if not sha:
                return 404, ok, b'{"message": "No commit found"}'
            message = git("log", "-1", "--format=%B", sha, cwd=repo.bare)
            return (
                200,
                ok,
                json.dumps(
                    {
                        "sha": sha,
                        "commit": {"message": message},
                        "author": {"login": "octocat"},
                        "html_url": f"{self.http_url}/{repo.full_name}/commit/{sha}",
                    }
                ).encode(),
            )
        if (m := re.match(r"^/tarball/(.+)$", rest)) and method == "GET":
            sha = self._rev(repo, m.group(1))
            port = self._codeload.server_address[1]
            location = f"http://{self.codeload_host}:{port}/{repo.full_name}/legacy.tar.gz/{sha}"
            return 302, {"Location": location}, b""
        if (m := re.match(r"^/compare/([0-9a-f]+)\.\.\.([0-9a-f]+)$", rest)) and method == "GET":
            return 200, ok, json.dumps({"files": self._diff(repo, m.group(1), m.group(2))}).encode()
        if (m := re.match(r"^/pulls/(\d+)/files$", rest)) and method == "GET":
            base, head = repo.pulls[int(m.group(1))]
            return 200, ok, json.dumps(self._diff(repo, base, head)).encode()
        if (m := re.match(r"^/statuses/([0-9a-f]{40})$", rest)) and method == "POST":
            with self._lock:
                repo.statuses.append((m.group(1), json.loads(body)))
            return 201, ok, body
        if (m := re.match(r"^/issues/(\d+)/comments$", rest)) and method == "POST":
            if int(m.group(1)) not in repo.pulls:
                return 404, ok, b'{"message": "Not Found"}'
            with self._lock:
                comment_id, self._next_hook = self._next_hook, self._next_hook + 1
                repo.comments[comment_id] = (int(m.group(1)), json.loads(body)["body"])
            return 201, ok, json.dumps({"id": comment_id, "body": repo.comments[comment_id][1]}).encode()
        if (m := re.match(r"^/issues/comments/(\d+)$", rest)) and method == "PATCH":
            found = repo.comments.get(int(m.group(1)))
            if found is None:
                return 404, ok, b'{"message": "Not Found"}'
            with self._lock:
                repo.comments[int(m.group(1))] = (found[0], json.loads(body)["body"])
            return 200, ok, json.dumps({"id": int(m.group(1)), "body": json.loads(body)["body"]}).encode()
        return 404, ok, b'{"message": "Not Found"}'
