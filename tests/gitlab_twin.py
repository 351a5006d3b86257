"""A GitLab twin for the tests: the GitHub twin's real git repositories (`forge_twin.py`: bare repositories served
over git's smart HTTP protocol by `git http-backend`, pushed to with `git`) behind the REST API v4 calls Terrace
makes (relative to `api_url`, `http://127.0.0.1:<port>/api/v4` as a self-managed GitLab's), and webhook deliveries
as GitLab sends them: the hook's token as `X-Gitlab-Token`, `X-Gitlab-Event`, `X-Gitlab-Event-UUID`,
`Idempotency-Key`. Every request is checked against GitLab's documented API and every payload against its documented
webhook events (`gitlab_contract.py`): a request that is not one of the calls, or has an unknown parameter or a body
GitLab would refuse, is answered 400 and recorded in `problems`, which a test asserts empty."""

from __future__ import annotations

import json
import re
import subprocess
import uuid
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import httpx
from forge_twin import ForgeTwin
from git_forge import Repo, git
from gitlab_contract import EVENT_HEADERS, check_request, payload
from oauth_twin import OAuthApps

OK = {"Content-Type": "application/json"}


def _json(status: int, value: Any) -> tuple[int, dict[str, str], bytes]:
    return status, OK, json.dumps(value).encode()


class GitLabTwin(ForgeTwin):
    def __enter__(self) -> GitLabTwin:
        super().__enter__()
        self.api_url = f"{self.http_url}/api/v4"
        self.project_ids: dict[str, int] = {}
        self.oauth = OAuthApps("gitlab", self.token, problems=self.problems)  # its OAuth applications' flow
        return self

    def project_id(self, full_name: str) -> int:
        return self.project_ids.setdefault(full_name, 100 + len(self.project_ids))

    # deliveries --------------------------------------------------------------------------
    def deliver(  # type: ignore[override]
        self, full_name: str, event: str, body: dict[str, Any], delivery: str | None = None, token: str | None = None
    ) -> list[httpx.Response]:
        """The delivery to every hook of the project, with its token (or `token`)."""
        answers = []
        for url, hook_token in list(self.repos[full_name].hooks.values()):
            event_id = delivery or str(uuid.uuid4())
            headers = {"X-Gitlab-Event": EVENT_HEADERS[event], "X-Gitlab-Token": token or hook_token,
                       "X-Gitlab-Event-UUID": event_id, "X-Gitlab-Webhook-UUID": str(uuid.uuid4()),
                       "Idempotency-Key": event_id, "X-Gitlab-Instance": self.http_url,
                       "Content-Type": "application/json", "User-Agent": "GitLab/17.6.0"}  # fmt: skip
            sent = json.dumps(body).encode()
            answers.append(httpx.post(url, content=sent, headers=headers, verify=self._verify, timeout=30))
        return answers

    def _project(self, full_name: str) -> dict[str, Any]:
        namespace, _, name = full_name.rpartition("/")
        return {"id": self.project_id(full_name), "name": name, "namespace": namespace,
                "web_url": f"{self.http_url}/{full_name}", "git_http_url": f"{self.http_url}/{full_name}.git",
                "path_with_namespace": full_name, "default_branch": "main", "visibility_level": 0}  # fmt: skip

    def _commit(self, full_name: str, sha: str) -> dict[str, Any]:
        message = git("log", "-1", "--format=%B", sha, cwd=self.repos[full_name].bare)
        return {"id": sha, "message": message, "title": message.splitlines()[0] if message else "",
                "timestamp": "2026-01-01T00:00:00+00:00", "url": f"{self.http_url}/{full_name}/-/commit/{sha}",
                "author": {"name": "Octo Cat", "email": "octocat@forge.test"}}  # fmt: skip

    def push_payload(self, full_name: str, ref: str, before: str, after: str) -> dict[str, Any]:
        kind = "tag_push" if ref.startswith("refs/tags/") else "push"
        return payload(kind, {
            "object_kind": kind, "event_name": kind, "before": before, "after": after, "ref": ref,
            "ref_protected": True, "checkout_sha": after, "user_id": 4, "user_name": "Octo Cat",
            "user_username": "octocat", "user_email": "", "user_avatar": None,
            "project_id": self.project_id(full_name), "project": self._project(full_name),
            "commits": [self._commit(full_name, after)], "total_commits_count": 1,
            "repository": {"name": full_name.rpartition("/")[2], "homepage": f"{self.http_url}/{full_name}"},
        })  # fmt: skip

    def merge_request_payload(
        self, full_name: str, iid: int, head: str, source_branch: str, action: str = "open",
        source: str | None = None, oldrev: str | None = None,
    ) -> dict[str, Any]:  # fmt: skip
        repo = self.repos[full_name]
        repo.pulls[iid] = (self._rev(repo, "refs/heads/main"), head)
        source_name = source or full_name
        commit = self._commit(full_name, head)
        attributes = {
            "id": 9000 + iid, "iid": iid, "target_branch": "main", "source_branch": source_branch,
            "source_project_id": self.project_id(source_name), "target_project_id": self.project_id(full_name),
            "title": "a change", "state": "opened", "action": action, "author_id": 4,
            "url": f"{self.http_url}/{full_name}/-/merge_requests/{iid}", "source": self._project(source_name),
            "target": self._project(full_name), "last_commit": commit,
            **({"oldrev": oldrev} if oldrev else {}),
        }  # fmt: skip
        return payload("merge_request", {
            "object_kind": "merge_request", "event_type": "merge_request",
            "user": {"id": 4, "name": "Octo Cat", "username": "octocat", "avatar_url": None},
            "project": self._project(full_name), "object_attributes": attributes, "labels": [], "changes": {},
            "repository": {"name": full_name.rpartition("/")[2], "homepage": f"{self.http_url}/{full_name}"},
        })  # fmt: skip

    # the API -----------------------------------------------------------------------------
    def _api_request(self, method: str, raw_path: str, headers: dict[str, str], body: bytes) -> Any:
        if raw_path.startswith("/git/"):
            return self._git_http(method, raw_path, headers, body)
        parts = urlsplit(raw_path)
        if self.oauth.handles(parts.path):
            return self.oauth.answer(method, raw_path, headers, body)
        if not parts.path.startswith("/api/v4/"):
            return self._problem(f"{method} {raw_path}: not under the api-url")
        path, query = parts.path.removeprefix("/api/v4"), dict(parse_qsl(parts.query))
        with self._lock:
            self.calls.append(f"{method} {unquote(path)}")
        if headers.get("Authorization") != f"Bearer {self.token}":
            return _json(401, {"message": "401 Unauthorized"})
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            return self._problem(f"{method} {path}: the body is not JSON")
        problems, named = check_request(method, path, query, parsed)
        if problems:
            status, out, text = self._problem("; ".join(problems))
            return 400, out, text
        repo = self.repos.get(unquote(named["id"]))
        if repo is None:
            return _json(404, {"message": "404 Project Not Found"})
        return self._gitlab_route(repo, method, path, query, named, parsed)

    def _gitlab_route(
        self, repo: Repo, method: str, path: str, query: dict[str, str], named: dict[str, str], body: Any
    ) -> Any:
        rest = re.sub(r"^/projects/[^/]+", "", path)
        if rest == "":
            return _json(200, self._project(repo.full_name))
        if rest == "/hooks":
            with self._lock:
                hook_id, self._next_hook = self._next_hook, self._next_hook + 1
                repo.hooks[hook_id] = (body["url"], body.get("token", ""))
            return _json(201, {"id": hook_id, "url": body["url"], "push_events": True})
        if rest.startswith("/hooks/"):
            found = repo.hooks.pop(int(named["hook"]), None)
            return (204, {}, b"") if found else _json(404, {"message": "404 Not found"})
        if rest.startswith("/repository/commits/"):
            sha = self._rev(repo, unquote(named["sha"]))
            if not sha:
                return _json(404, {"message": "404 Commit Not Found"})
            return _json(200, {**self._commit(repo.full_name, sha), "web_url": f"{self.http_url}/-/commit/{sha}",
                               "author_name": "Octo Cat"})  # fmt: skip
        if rest == "/repository/archive.tar.gz":
            sha = self._rev(repo, query.get("sha") or "refs/heads/main")
            name = repo.full_name.rpartition("/")[2]
            archive = subprocess.run(
                ["git", "archive", "--format=tar.gz", f"--prefix={name}-{sha}-{sha}/", sha],
                cwd=repo.bare, capture_output=True, timeout=30, check=True,
            ).stdout  # fmt: skip
            return 200, {"Content-Type": "application/x-gzip"}, archive
        if rest == "/repository/compare":
            diffs = self._diffs(repo, query["from"], query["to"])
            return _json(200, {"commit": None, "commits": [], "diffs": diffs, "compare_timeout": False,
                               "compare_same_ref": False})  # fmt: skip
        if rest.endswith("/diffs"):
            if int(named["iid"]) not in repo.pulls:
                return _json(404, {"message": "404 Not found"})  # as GitLab before 15.7 answers every `diffs`
            base, head = repo.pulls[int(named["iid"])]
            page, per_page = int(query.get("page", 1)), int(query.get("per_page", 20))
            return _json(200, self._diffs(repo, base, head)[(page - 1) * per_page : page * per_page])
        if rest.endswith("/notes") and method == "POST":
            if int(named["iid"]) not in repo.pulls:
                return _json(404, {"message": "404 Not found"})
            with self._lock:
                note_id, self._next_hook = self._next_hook, self._next_hook + 1
                repo.comments[note_id] = (int(named["iid"]), body["body"])
            return _json(201, {"id": note_id, "body": body["body"], "noteable_type": "MergeRequest"})
        if "/notes/" in rest and method == "PUT":
            found = repo.comments.get(int(named["note"]))
            if found is None or found[0] != int(named["iid"]):
                return _json(404, {"message": "404 Note Not Found"})
            with self._lock:
                repo.comments[int(named["note"])] = (found[0], body["body"])
            return _json(200, {"id": int(named["note"]), "body": body["body"], "noteable_type": "MergeRequest"})
        if rest.startswith("/statuses/"):
            with self._lock:
                repo.statuses.append((named["sha"], body))
            return _json(201, {"id": len(repo.statuses), "sha": named["sha"], **body})
        return _json(404, {"message": "404 Not Found"})

    def _diffs(self, repo: Repo, base: str, head: str) -> list[dict[str, Any]]:
        names = git("diff", "--name-only", f"{base}...{head}", cwd=repo.bare).splitlines()
        return [{"old_path": n, "new_path": n, "new_file": False, "renamed_file": False, "deleted_file": False,
                 "diff": ""} for n in names]  # fmt: skip
