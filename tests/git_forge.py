"""The git side of the forge twins (`forge_twin.py`'s GitHub and, built on it, `gitlab_twin.py`, `bitbucket_twin.py`,
`azure_twin.py`): real bare git repositories served over git's smart HTTP protocol by `git http-backend` under
`/git/`, cloned from and pushed to with the `git` binary, their tarballs by `git archive` from a second server (the
tarball host, as github.com's codeload: it records a problem if the credential comes along), and the two HTTP servers
started and stopped by the test (`with Twin(...) as twin`). A forge's REST API is its subclass's `_api_request`.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self
from urllib.parse import unquote, urlsplit

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


class GitForge:
    def __init__(self, root: Path, token: str, ca_bundle: str | bool = True) -> None:
        self.root, self.token, self._verify = root, token, ca_bundle
        self.repos: dict[str, Repo] = {}
        self.calls: list[str] = []
        self.problems: list[str] = []
        self.git_requests: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._next_hook = 1
        self.codeload_host = "127.0.0.1"  # where the tarball redirects (a test may point it elsewhere)

    # lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> Self:
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
        raise NotImplementedError  # the forge's REST API (and `/git/` through `_git_http`)

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
