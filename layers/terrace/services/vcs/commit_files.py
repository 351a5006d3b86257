"""A commit's files, as every VCS source reads them (a workspace's configuration, a policy set's policies, a registry
module's version): the forge's tarball of the commit, or with `ingress-submodules` a shallow clone of the commit and
its submodules (`adapters/repository_clone.py`); either read by the bounded archive reader (`archives.py`), keeping
the files below `folder` when one is given."""

from __future__ import annotations

from terrace.adapters.forge import Forge, ForgeAccess
from terrace.adapters.repository_clone import CloneError, CloneRequest, RepositoryClone
from terrace.domain.errors import Invalid
from terrace.services.vcs.archives import RepoBounds, repacked

CLONE_TIMEOUT_S = 120.0  # a clone of a commit and its submodules, all steps together


class CommitFiles:
    def __init__(self, forge: Forge, clone: RepositoryClone | None, bounds: RepoBounds) -> None:
        self._forge, self._clone, self.bounds = forge, clone, bounds

    def read(self, access: ForgeAccess, repo: str, sha: str, submodules: bool = False, folder: str = "") -> bytes:
        """The commit's files as a .tar.gz below the repository's root (or `folder`); Invalid naming what failed."""
        if not submodules:
            return repacked(self._forge.tarball(access, repo, sha, self.bounds.archive_max), self.bounds, folder)
        if self._clone is None:
            raise Invalid("this deployment cannot clone submodules (no git): turn ingress-submodules off")
        url = self._forge.repository(access, repo).clone_url
        if not url:
            raise Invalid(f"the forge names no clone URL for {repo}")
        bounds = self.bounds
        request = CloneRequest(url, sha, access.token, bounds.total_max, bounds.files_max, CLONE_TIMEOUT_S)
        try:
            return repacked(self._clone.clone(request), bounds, folder)
        except CloneError as exc:
            raise Invalid(f"{repo} at {sha} with its submodules: {exc.detail}") from exc
