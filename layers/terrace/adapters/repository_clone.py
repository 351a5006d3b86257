"""The repository clone port: a commit's files with its submodules (a workspace's `vcs-repo` with
`ingress-submodules`), where a forge's tarball has none. Implementations: `git_repository_clone.py` (git's smart
HTTP protocol, `git` run through `tenant_process.py`) and none (a deployment without git, such as the events Lambda:
such a workspace's pushes start nothing, logged)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class CloneError(Exception):
    """The clone was refused (a submodule's URL, a bound) or failed; `detail` says which."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


@dataclass(frozen=True)
class CloneRequest:
    url: str  # the repository's https (or allowed http) clone URL
    sha: str  # the commit
    credential: str  # the OAuth token's: sent only to the repository's own URL, never to a submodule's
    max_bytes: int  # the checkout's files, all together
    max_files: int
    timeout_s: float


class RepositoryClone(Protocol):
    def clone(self, request: CloneRequest) -> bytes:
        """The commit's files and its submodules' (recursively, shallow), as a .tar.gz under one top-level folder
        (as a forge's tarball), without `.git` and without links; CloneError when refused or failed."""
        ...
