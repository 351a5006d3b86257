"""The forge port: the REST calls Terrace makes to a GitHub-shaped forge (GitHub, GitHub Enterprise Server, Gitea
and Forgejo), relative to an OAuth client's `api-url`, with an OAuth token's credential. The whole set, and no
other (docs/features/vcs.md lists it; `tests/contract/test_forge_contract.py` holds both implementations to it):

- `POST /repos/{owner}/{repo}/hooks`, `DELETE /repos/{owner}/{repo}/hooks/{id}`: a workspace's webhook
- `GET /repos/{owner}/{repo}`: the repository (its default branch, its page)
- `GET /repos/{owner}/{repo}/commits/{ref}`: a commit (the SHA a branch or tag names, its message and author)
- `GET /repos/{owner}/{repo}/tarball/{ref}`: the commit's files (github.com redirects to another host: each hop
  passes the destination checks of any outbound request, and the credential is not sent to another host)
- `GET /repos/{owner}/{repo}/compare/{base}...{head}`, `GET /repos/{owner}/{repo}/pulls/{number}/files`: the files a
  push or a pull request changed (trigger patterns)
- `POST /repos/{owner}/{repo}/statuses/{sha}`: the commit status of a run

Implementations: `github_forge.py` (httpx, under `domain/destinations.py`'s rules) and `memory_forge.py` (unit tests).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class ForgeError(Exception):
    """The forge refused or did not answer; `status` is its HTTP status (None: no answer, or refused here)."""

    def __init__(self, detail: str, status: int | None = None) -> None:
        super().__init__(detail)
        self.detail, self.status = detail, status


@dataclass(frozen=True)
class ForgeAccess:
    api_url: str  # https://api.github.com, https://ghe.example.com/api/v3, https://gitea.example.com/api/v1
    token: str  # the OAuth token's credential (a personal access token)


@dataclass(frozen=True)
class Repository:
    identifier: str  # owner/name
    default_branch: str
    html_url: str


@dataclass(frozen=True)
class Commit:
    sha: str
    message: str
    html_url: str
    author: str  # the forge login of the commit's author ("" when the forge knows none)


@dataclass(frozen=True)
class CommitStatus:
    state: str  # pending, success, failure, error
    context: str  # Terrace/<organization>/<workspace>
    description: str
    target_url: str  # the run's page


STATES = ("pending", "success", "failure", "error")
FILES_MAX = 3000  # changed files read for trigger patterns (GitHub lists at most 3000 for a pull request)


class Forge(Protocol):
    def repository(self, access: ForgeAccess, repo: str) -> Repository: ...

    def create_hook(self, access: ForgeAccess, repo: str, url: str, secret: str) -> str:
        """A webhook for push and pull_request deliveries to `url`, signed with `secret`; its id."""
        ...

    def delete_hook(self, access: ForgeAccess, repo: str, hook_id: str) -> None:
        """Gone already is fine."""
        ...

    def commit(self, access: ForgeAccess, repo: str, ref: str) -> Commit: ...

    def tarball(self, access: ForgeAccess, repo: str, ref: str, max_bytes: int) -> bytes:
        """The gzipped tarball of `ref` (one top-level folder); ForgeError past `max_bytes`."""
        ...

    def changed_files(self, access: ForgeAccess, repo: str, base: str, head: str) -> list[str] | None:
        """The paths changed from `base` to `head` (None: the forge cannot say, e.g. more than it lists)."""
        ...

    def pull_files(self, access: ForgeAccess, repo: str, number: int) -> list[str] | None: ...

    def set_status(self, access: ForgeAccess, repo: str, sha: str, status: CommitStatus) -> None: ...
