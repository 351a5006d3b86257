"""The forge port in memory (unit tests): repositories of commits (each a tarball's files), hooks and statuses,
recorded (a status with the state the access's kind of forge is sent: `forge.py: forge_state`); a credential other
than the repository's is refused as GitHub and GitLab refuse it (401)."""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass, field, replace

from terrace.adapters.forge import Commit, CommitStatus, ForgeAccess, ForgeError, Repository, forge_state
from terrace.domain.bounded_tar import write_tar


@dataclass
class MemoryRepository:
    identifier: str
    token: str
    default_branch: str = "main"
    refs: dict[str, str] = field(default_factory=dict)  # branch or tag -> sha
    commits: dict[str, tuple[str, dict[str, bytes]]] = field(default_factory=dict)  # sha -> (message, files)
    hooks: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (url, secret)
    statuses: list[tuple[str, CommitStatus]] = field(default_factory=list)
    pulls: dict[int, list[str]] = field(default_factory=dict)  # number -> changed files
    clone_url: str = ""  # where git clones it (a test's git http-backend), for `ingress-submodules`
    comments: dict[str, tuple[int, str]] = field(default_factory=dict)  # id -> (pull request number, body)


@dataclass
class MemoryForge:
    repositories: dict[str, MemoryRepository] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)
    _next_hook: int = 1

    def add(self, identifier: str, token: str) -> MemoryRepository:
        self.repositories[identifier] = MemoryRepository(identifier, token)
        return self.repositories[identifier]

    def push(self, identifier: str, ref: str, files: dict[str, bytes], message: str = "change") -> str:
        repo = self.repositories[identifier]
        sha = hashlib.sha1(repr((ref, sorted(files.items()), message, len(repo.commits))).encode()).hexdigest()
        repo.commits[sha] = (message, dict(files))
        repo.refs[ref] = sha
        return sha

    def _repo(self, access: ForgeAccess, identifier: str, call: str) -> MemoryRepository:
        self.calls.append(call)
        repo = self.repositories.get(identifier)
        if repo is None:
            raise ForgeError(f"{identifier}: 404 Not Found", 404)
        if access.token != repo.token:
            raise ForgeError(f"{identifier}: 401 Bad credentials", 401)
        return repo

    def _sha(self, repo: MemoryRepository, ref: str) -> str:
        sha = repo.refs.get(ref, ref)
        if sha not in repo.commits:
            raise ForgeError(f"{repo.identifier}: no commit {ref}", 404)
        return sha

    def repository(self, access: ForgeAccess, repo: str) -> Repository:
        found = self._repo(access, repo, f"GET /repos/{repo}")
        return Repository(repo, found.default_branch, f"https://forge.test/{repo}", found.clone_url)

    def create_hook(self, access: ForgeAccess, repo: str, url: str, secret: str) -> str:
        found = self._repo(access, repo, f"POST /repos/{repo}/hooks")
        hook_id = str(self._next_hook)
        self._next_hook += 1
        found.hooks[hook_id] = (url, secret)
        return hook_id

    def delete_hook(self, access: ForgeAccess, repo: str, hook_id: str) -> None:
        self._repo(access, repo, f"DELETE /repos/{repo}/hooks/{hook_id}").hooks.pop(hook_id, None)

    def commit(self, access: ForgeAccess, repo: str, ref: str) -> Commit:
        found = self._repo(access, repo, f"GET /repos/{repo}/commits/{ref}")
        sha = self._sha(found, ref)
        return Commit(sha, found.commits[sha][0], f"https://forge.test/{repo}/commit/{sha}", "octocat")

    def tarball(self, access: ForgeAccess, repo: str, ref: str, max_bytes: int) -> bytes:
        found = self._repo(access, repo, f"GET /repos/{repo}/tarball/{ref}")
        sha = self._sha(found, ref)
        buffer = io.BytesIO()
        top = f"{repo.replace('/', '-')}-{sha[:7]}"
        with write_tar(buffer) as tar:
            for name, data in sorted(found.commits[sha][1].items()):
                tar.add(f"{top}/{name}", data)
        if buffer.tell() > max_bytes:
            raise ForgeError(f"the repository's tarball is larger than {max_bytes} bytes")
        return buffer.getvalue()

    def changed_files(self, access: ForgeAccess, repo: str, base: str, head: str) -> list[str] | None:
        found = self._repo(access, repo, f"GET /repos/{repo}/compare/{base}...{head}")
        before = found.commits.get(base, ("", {}))[1]
        after = found.commits[self._sha(found, head)][1]
        return sorted(n for n in set(before) | set(after) if before.get(n) != after.get(n))

    def pull_files(self, access: ForgeAccess, repo: str, number: int) -> list[str] | None:
        return list(self._repo(access, repo, f"GET /repos/{repo}/pulls/{number}/files").pulls.get(number, []))

    def set_status(self, access: ForgeAccess, repo: str, sha: str, status: CommitStatus) -> None:
        shown = replace(status, state=forge_state(access.kind, status.state))
        self._repo(access, repo, f"POST /repos/{repo}/statuses/{sha}").statuses.append((sha, shown))

    def comment(self, access: ForgeAccess, repo: str, number: int, body: str, comment_id: str | None) -> str:
        if comment_id is None:
            found = self._repo(access, repo, f"POST /repos/{repo}/issues/{number}/comments")
            comment_id = str(self._next_hook)
            self._next_hook += 1
        else:
            found = self._repo(access, repo, f"PATCH /repos/{repo}/issues/comments/{comment_id}")
            if comment_id not in found.comments:
                raise ForgeError(f"{repo}: no comment {comment_id}", 404)
        found.comments[comment_id] = (number, body)
        return comment_id
