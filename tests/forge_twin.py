"""A GitHub-compatible forge twin for the tests: a small HTTP server answering the REST calls Terrace makes
(relative to `api_url`, `http://127.0.0.1:<port>/api/v3` as GitHub Enterprise Server's), over real git
repositories (bare repositories served over git's smart HTTP protocol by `git http-backend` under `/git/`, cloned
from and pushed to with the `git` binary; tarballs by `git archive`), and sending
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
import subprocess
import threading
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import httpx
from github_contract import contract
from oauth_twin import OAuthApps

ZERO = "0" * 40


@dataclass
class Repo:
    full_name: str
    bare: Path
    hooks: dict[int, tuple[str, str]] = field(default_factory=dict)  # id -> (url, secret)
    statuses: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (sha, body)
    pulls: dict[int, tuple[str, str]] = field(default_factory=dict)  # number -> (base sha, head sha)
    comments: dict[int, tuple[int, str]] = field(default_factory=dict)  # id -> (issue number, body)


def git(*args: str, cwd: Path | None = None) -> str:
    env = {
        "GIT_AUTHOR_NAME": "Octo Cat",
        "GIT_AUTHOR_EMAIL": "octocat@forge.test",
        "GIT_COMMITTER_NAME": "Octo Cat",
        "GIT_COMMITTER_EMAIL": "octocat@forge.test",
        "HOME": "/nonexistent",
        "GIT_CONFIG_NOSYSTEM": "1",
        "PATH": "/usr/bin:/bin",
    }
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)}: {done.stderr}")
    return done.stdout.strip()


class ForgeTwin:
    def __init__(self, root: Path, token: str, ca_bundle: str | bool = True) -> None:
        self.root, self.token, self._verify = root, token, ca_bundle
        self.repos: dict[str, Repo] = {}
        self.calls: list[str] = []
        self.problems: list[str] = []
        self.git_requests: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._next_hook = 1
        self.codeload_host = "127.0.0.1"  # where the tarball redirects (a test may point it elsewhere)
        self.oauth = OAuthApps("github", token, problems=self.problems)  # its OAuth applications' web flow

    # lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> ForgeTwin:
        self._api = ThreadingHTTPServer(("127.0.0.1", 0), self._handler(self._api_request))
        self._codeload = ThreadingHTTPServer(("127.0.0.1", 0), self._handler(self._codeload_request))
        self._threads = [
            threading.Thread(target=s.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
            for s in (self._api, self._codeload)
        ]
        for thread in self._threads:
            thread.start()
        self.api_url = f"http://127.0.0.1:{self._api.server_address[1]}/api/v3"
        self.http_url = f"http://127.0.0.1:{self._api.server_address[1]}"
        return self

    def __exit__(self, *exc: Any) -> None:
        for server in (self._api, self._codeload):
            server.shutdown()
            server.server_close()
        for thread in self._threads:
            thread.join(10)

    # repositories (real git) --------------------------------------------------------------
    def create(self, full_name: str) -> Path:
        """A bare repository and a work tree cloned from it (returned) on branch main."""
        bare = self.root / "repos" / f"{full_name}.git"
        bare.parent.mkdir(parents=True, exist_ok=True)
        git("init", "--quiet", "--bare", "--initial-branch=main", str(bare))
        self.repos[full_name] = Repo(full_name, bare)
        git("config", "http.receivepack", "true", cwd=bare)
        work = self.root / "work" / full_name
        work.parent.mkdir(parents=True, exist_ok=True)
        git("clone", "--quiet", f"{self.http_url}/git/{full_name}.git", str(work))  # over git's smart HTTP
        git("checkout", "--quiet", "-b", "main", cwd=work)
        return work

    def commit_and_push(self, work: Path, files: dict[str, str], message: str, branch: str = "main") -> tuple[str, str]:
        """Writes `files`, commits and pushes `branch`: (the branch's SHA before, after)."""
        repo = self._repo_of(work)
        before = self._rev(repo, f"refs/heads/{branch}") or ZERO
        for name, text in files.items():
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            (work / name).write_text(text)
        git("add", "-A", cwd=work)
        git("commit", "--quiet", "-m", message, cwd=work)
        git("push", "--quiet", "origin", f"HEAD:refs/heads/{branch}", cwd=work)
        return before, self._rev(repo, f"refs/heads/{branch}")

    def _repo_of(self, work: Path) -> Repo:
        return next(r for r in self.repos.values() if (self.root / "work" / r.full_name) == work)

    def _rev(self, repo: Repo, ref: str) -> str:
        try:
            return git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", cwd=repo.bare)
        except AssertionError:
            return ""

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

    # the servers -------------------------------------------------------------------------
    def _handler(self, answer: Any) -> type[BaseHTTPRequestHandler]:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                status, headers, payload = answer(self.command, self.path, dict(self.headers), body)
                self.send_response(status)
                for key, value in {**headers, "Content-Length": str(len(payload))}.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _any  # noqa: N815

            def log_message(self, *args: Any) -> None:
                pass

        return Handler

    def _problem(self, text: str) -> tuple[int, dict[str, str], bytes]:
        with self._lock:
            self.problems.append(text)
        return 422, {"Content-Type": "application/json"}, json.dumps({"message": text}).encode()

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

    def _git_http(self, method: str, raw_path: str, headers: dict[str, str], body: bytes) -> Any:
        """git's smart HTTP protocol, by `git http-backend` (CGI): what the tests clone from and push to (each
        request's path and Authorization header recorded in `git_requests`)."""
        parts = urlsplit(raw_path)
        with self._lock:
            self.git_requests.append((parts.path, headers.get("Authorization", "")))
        env = {
            "GIT_PROJECT_ROOT": str(self.root / "repos"),
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH": "/usr/bin:/bin",
            "PATH_INFO": unquote(parts.path).removeprefix("/git"),
            "QUERY_STRING": parts.query,
            "REQUEST_METHOD": method,
            "CONTENT_TYPE": headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_USER": "octocat",
            "REMOTE_ADDR": "127.0.0.1",
            "GIT_CONFIG_NOSYSTEM": "1",
            "HOME": "/nonexistent",
        }
        done = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, timeout=60)
        head, _, payload = done.stdout.partition(b"\r\n\r\n")
        status, out = 200, {}
        for line in head.decode(errors="replace").split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                out[name] = value.strip()
        return status, out, payload

    def _diff(self, repo: Repo, base: str, head: str) -> list[dict[str, str]]:
        names = git("diff", "--name-only", base, head, cwd=repo.bare).splitlines()
        return [{"filename": name, "status": "modified"} for name in names]

    def _codeload_request(self, method: str, raw_path: str, headers: dict[str, str], body: bytes) -> Any:
        if "Authorization" in headers:
            self._problem("the credential was sent to the tarball's host")
        m = re.match(r"^/([^/]+/[^/]+)/legacy\.tar\.gz/([0-9a-f]{40})$", raw_path)
        repo = self.repos.get(m.group(1)) if m else None
        if repo is None or m is None:
            return 404, {}, b"Not Found"
        prefix = f"{repo.full_name.replace('/', '-')}-{m.group(2)[:7]}/"
        archive = subprocess.run(
            ["git", "archive", "--format=tar.gz", f"--prefix={prefix}", m.group(2)],
            cwd=repo.bare,
            capture_output=True,
            timeout=30,
            check=True,
        ).stdout
        return 200, {"Content-Type": "application/x-gzip"}, archive
