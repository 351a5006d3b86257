"""Bitbucket twins for the tests: the GitHub twin's real git repositories (`forge_twin.py`: bare repositories
served over git's smart HTTP protocol by `git http-backend`, pushed to with `git`) behind the REST calls Terrace
makes to Bitbucket Cloud (`BitbucketCloudTwin`, api-url `http://127.0.0.1:<port>/2.0`, the archive on the web
host `/<workspace>/<repo>/get/<sha>.tar.gz` redirecting to a second host, as bitbucket.org does; its OAuth
consumers' flow, `oauth_twin.py`) and to Bitbucket Data Center (`BitbucketServerTwin` in `bitbucket_server_twin.py`,
api-url `http://127.0.0.1:<port>`), and webhook deliveries as each sends them (`X-Event-Key`, the delivery's id,
`X-Hub-Signature: sha256=<HMAC of the body under the hook's secret>`). Every request is checked against Atlassian's
published descriptions and every payload against its documented events (`bitbucket_contract.py`): a request that
is not one of the calls, or has an unknown parameter or a body Bitbucket would refuse, is answered 400 and recorded
in `problems`, which a test asserts empty."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import uuid
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from bitbucket_contract import CLOUD_CALLS, check_request, payload
from forge_twin import ForgeTwin
from git_forge import ZERO, Repo, git
from oauth_twin import OAuthApps

OK = {"Content-Type": "application/json"}
Answer = tuple[int, dict[str, str], bytes]


def _json(status: int, value: Any) -> Answer:
    return status, OK, json.dumps(value).encode()


class _BitbucketTwin(ForgeTwin):
    calls_spec: Any = ()
    api_prefix = ""
    comment_versions: dict[int, int]  # a comment's version (Data Center's PUT names the one it replaces)

    def __enter__(self) -> Any:
        super().__enter__()
        self.comment_versions = {}
        return self

    def deliveries(
        self, full_name: str, event: str, body: dict[str, Any], delivery: str | None = None, secret: str | None = None
    ) -> list[tuple[str, dict[str, str], bytes]]:
        """(url, headers, body) of the delivery to every hook of the repository, signed with its secret."""
        sent = json.dumps(body).encode()
        out = []
        for hook_id, (url, hook_secret) in list(self.repos[full_name].hooks.items()):
            signature = hmac.new((secret or hook_secret).encode(), sent, hashlib.sha256).hexdigest()
            headers = {"X-Event-Key": event, "X-Hub-Signature": f"sha256={signature}", **OK,
                       **self._delivery_headers(str(hook_id), delivery)}  # fmt: skip
            out.append((url, headers, sent))
        return out

    def _delivery_headers(self, hook_id: str, delivery: str | None) -> dict[str, str]:
        raise NotImplementedError

    def _api_request(self, method: str, raw_path: str, headers: dict[str, str], body: bytes) -> Any:
        if raw_path.startswith("/git/"):
            return self._git_http(method, raw_path, headers, body)
        parts = urlsplit(raw_path)
        if self.oauth.flavour == "bitbucket" and self.oauth.handles(parts.path):  # the web host's OAuth 2 endpoints
            return self.oauth.answer(method, raw_path, headers, body)
        if (web := self._web(method, parts.path, headers)) is not None:
            return web
        if not parts.path.startswith(self.api_prefix + "/"):
            return self._problem(f"{method} {raw_path}: not under the api-url")
        path, query = unquote(parts.path.removeprefix(self.api_prefix)), dict(parse_qsl(parts.query))
        with self._lock:
            self.calls.append(f"{method} {path}")
        if headers.get("Authorization") != f"Bearer {self.token}":
            return _json(401, {"type": "error", "error": {"message": "Unauthorized"}})
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            return self._problem(f"{method} {path}: the body is not JSON")
        problems, named = check_request(self.calls_spec, method, path, query, parsed)
        if problems:
            return (400, *self._problem("; ".join(problems))[1:])
        return self._answer(method, path, query, named, parsed)

    def _web(self, method: str, path: str, headers: dict[str, str]) -> Answer | None:
        return None

    def _answer(self, method: str, path: str, query: dict[str, str], named: dict[str, str], body: Any) -> Answer:
        raise NotImplementedError

    def _changed(self, repo: Repo, base: str, head: str) -> list[str]:
        return git("diff", "--name-only", f"{base}...{head}", cwd=repo.bare).splitlines()

    def _hook(self, repo: Repo, url: str, secret: str, hook_id: Any) -> None:
        with self._lock:
            repo.hooks[hook_id] = (url, secret)

    def _comment(self, repo: Repo, number: int, comment_id: str | None, text: str | None) -> tuple[int, str] | None:
        """A pull request's comment: written (`comment_id` None), edited (`text`) or read; None: no such one."""
        with self._lock:
            if number not in repo.pulls:
                return None
            if comment_id is None:
                made, self._next_hook = self._next_hook, self._next_hook + 1
                repo.comments[made] = (number, str(text))
                self.comment_versions[made] = 0
                return made, str(text)
            found = repo.comments.get(int(comment_id))
            if found is None or found[0] != number:
                return None
            if text is not None:
                repo.comments[int(comment_id)] = (number, text)
                self.comment_versions[int(comment_id)] += 1
            return int(comment_id), repo.comments[int(comment_id)][1]


class BitbucketCloudTwin(_BitbucketTwin):
    calls_spec = CLOUD_CALLS
    api_prefix = "/2.0"

    def __enter__(self) -> BitbucketCloudTwin:
        super().__enter__()
        self.api_url = f"{self.http_url}/2.0"
        self.oauth = OAuthApps("bitbucket", self.token, problems=self.problems)  # its OAuth consumers' flow
        return self

    def _delivery_headers(self, hook_id: str, delivery: str | None) -> dict[str, str]:
        return {"X-Request-UUID": delivery or str(uuid.uuid4()), "X-Hook-UUID": hook_id,
                "X-Attempt-Number": "1", "User-Agent": "Bitbucket-Webhooks/2.0"}  # fmt: skip

    def _repository(self, full_name: str) -> dict[str, Any]:  # type: ignore[override]
        return {"type": "repository", "uuid": "{" + str(uuid.uuid5(uuid.NAMESPACE_URL, full_name)) + "}",
                "full_name": full_name, "name": full_name.split("/")[1], "is_private": True, "scm": "git",
                "links": {"html": {"href": f"{self.http_url}/{full_name}"}},
                "mainbranch": {"type": "branch", "name": "main"}}  # fmt: skip

    @staticmethod
    def _actor() -> dict[str, Any]:
        return {"type": "user", "uuid": "{00000000-0000-0000-0000-000000000001}", "display_name": "Octo Cat",
                "nickname": "octocat", "account_id": "1", "links": {}}  # fmt: skip

    def push_payload(self, full_name: str, branch: str, before: str, after: str) -> dict[str, Any]:
        def ref(sha: str) -> dict[str, Any] | None:
            return (
                None if sha == ZERO else {"type": "branch", "name": branch, "target": {"type": "commit", "hash": sha}}
            )

        change = {
            "new": ref(after),
            "old": ref(before),
            "created": before == ZERO,
            "forced": False,
            "closed": False,
            "truncated": False,
            "commits": [{"type": "commit", "hash": after}],
            "links": {"html": {"href": f"{self.http_url}/{full_name}/branches/compare/{after}..{before}"}},
        }
        return payload("repo:push", {"actor": self._actor(), "repository": self._repository(full_name),
                                     "push": {"changes": [change]}})  # fmt: skip

    def pull_request_payload(
        self, full_name: str, number: int, head: str, head_ref: str, event: str = "pullrequest:created",
        head_repo: str | None = None,
    ) -> dict[str, Any]:  # fmt: skip
        repo = self.repos[full_name]
        base = self._rev(repo, "refs/heads/main")
        repo.pulls[number] = (base, head)
        pr = {"id": number, "title": "a change", "state": "OPEN", "author": self._actor(), "participants": [],
              "reviewers": [], "close_source_branch": False, "created_on": "2026-01-01T00:00:00+00:00",
              "updated_on": "2026-01-01T00:00:00+00:00",
              "links": {"html": {"href": f"{self.http_url}/{full_name}/pull-requests/{number}"}},
              "source": {"branch": {"name": head_ref}, "commit": {"hash": head[:12]},
                         "repository": self._repository(head_repo or full_name)},
              "destination": {"branch": {"name": "main"}, "commit": {"hash": base[:12]},
                              "repository": self._repository(full_name)}}  # fmt: skip
        return payload(event, {"actor": self._actor(), "pullrequest": pr, "repository": self._repository(full_name)})

    def _web(self, method: str, path: str, headers: dict[str, str]) -> Answer | None:
        m = re.fullmatch(r"/([^/]+/[^/]+)/get/([0-9a-f]{40})\.tar\.gz", path)
        if m is None or method != "GET":
            return None
        if headers.get("Authorization") != f"Bearer {self.token}":
            return 404, {}, b"Not Found"  # a private repository's archive, to one who may not see it
        port = self._codeload.server_address[1]
        return 302, {"Location": f"http://{self.codeload_host}:{port}/{m.group(1)}/legacy.tar.gz/{m.group(2)}"}, b""

    def _answer(self, method: str, path: str, query: dict[str, str], named: dict[str, str], body: Any) -> Answer:
        repo = self.repos.get(f"{named['workspace']}/{named['repo_slug']}")
        if repo is None:
            return _json(404, {"type": "error", "error": {"message": "Repository not found"}})
        rest = re.sub(r"^/repositories/[^/]+/[^/]+", "", path)
        if rest == "":
            return _json(200, self._repository(repo.full_name))
        if rest == "/hooks":
            hook_id = "{" + str(uuid.uuid4()) + "}"
            self._hook(repo, body["url"], body.get("secret", ""), hook_id)
            return _json(201, {"uuid": hook_id, "url": body["url"], "events": body["events"], "secret_set": True,
                               "active": True, "subject_type": "repository"})  # fmt: skip
        if rest.startswith("/hooks/"):
            found = repo.hooks.pop(named["uid"], None)  # type: ignore[call-overload]
            return (204, {}, b"") if found else _json(404, {"type": "error", "error": {"message": "not found"}})
        if rest.endswith("/statuses/build"):
            with self._lock:
                repo.statuses.append((named["commit"], body))
            return _json(201, {"type": "build", **body})
        if rest.startswith("/commit/"):
            sha = self._rev(repo, named["commit"])
            if not sha:
                return _json(404, {"type": "error", "error": {"message": "Commit not found"}})
            message = git("log", "-1", "--format=%B", sha, cwd=repo.bare)
            return _json(200, {"type": "commit", "hash": sha, "message": message,
                               "links": {"html": {"href": f"{self.http_url}/{repo.full_name}/commits/{sha}"}},
                               "author": {"type": "author", "raw": "Octo Cat <octocat@forge.test>",
                                          "user": self._actor()}})  # fmt: skip
        if rest.startswith("/diffstat/"):
            head, _, base = named["spec"].partition("..")
            names = self._changed(repo, self._rev(repo, base), self._rev(repo, head))
            page, size = int(query.get("page", 1)), int(query.get("pagelen", 500))
            values = [{"type": "diffstat", "status": "modified", "new": {"path": n}, "old": {"path": n}}
                      for n in names[(page - 1) * size : page * size]]  # fmt: skip
            more = {"next": f"{self.api_url}{path}?page={page + 1}"} if page * size < len(names) else {}
            return _json(200, {"pagelen": size, "page": page, "size": len(names), "values": values, **more})
        if "/comments" in rest:
            raw = body["content"]["raw"]
            found = self._comment(repo, int(named["pull_request_id"]), named.get("comment_id"), raw)
            if found is None:
                return _json(404, {"type": "error", "error": {"message": "not found"}})
            made = {"type": "pullrequest_comment", "id": found[0], "content": {"raw": found[1], "markup": "markdown"}}
            return _json(201 if method == "POST" else 200, made)
        if rest.startswith("/pullrequests/"):
            if int(named["pull_request_id"]) not in repo.pulls:
                return _json(404, {"type": "error", "error": {"message": "not found"}})
            base, head = repo.pulls[int(named["pull_request_id"])]
            return _json(200, {"id": int(named["pull_request_id"]), "source": {"commit": {"hash": head[:12]}},
                               "destination": {"commit": {"hash": base[:12]}}})  # fmt: skip
        return _json(404, {"type": "error", "error": {"message": "not found"}})
