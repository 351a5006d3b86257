"""Registry modules published from a repository (HCP's `POST /organizations/:org/registry-modules/vcs`).

- Tag-based (`publishing-mechanism` `git_tag`): the `vcs.delivery` of a pushed tag `vX.Y.Z` or `X.Y.Z` (a
  semantic version) whose SHA is still the tag's on the forge's API publishes that version from the tag's tarball.
- Branch-based (`branch`): versions are published through the API, `POST .../versions` with a `version` and a
  `commit-sha` of the repository: Terrace reads that commit from the forge (no upload link is handed out); a module
  created with an `initial-version` publishes its branch's head as it once connected (`vcs.connected`).

Either way the forge's tarball is read by the bounded archive reader (`services/vcs/archives.py`), then as any
uploaded module version is (`services/registry/module_versions.py`: `module_archive.py`'s bounds). A delivery's
failure is logged and ends its work; a request's is a 4xx."""

from __future__ import annotations

import logging
import re
from typing import Any

from terrace.adapters.forge import Forge, ForgeAccess, ForgeError
from terrace.domain import vcs_events
from terrace.domain.errors import Conflict, Invalid, NotFound, TerraceError
from terrace.domain.ids import looks_like
from terrace.domain.principal import Principal
from terrace.domain.registry_modules import PRIVATE, ModuleVersion, RegistryModule, check_version, tag_version
from terrace.domain.vcs import source_of
from terrace.services.access.authz import Action
from terrace.services.registry.module_versions import ModuleVersionService
from terrace.services.registry.modules import RegistryModuleService
from terrace.services.vcs.commit_files import CommitFiles
from terrace.services.vcs.connections import CONNECTED, RepositoryConnections
from terrace.services.vcs.webhooks import DELIVERY

log = logging.getLogger("terrace.vcs")
COMMIT_RE = re.compile(r"^[0-9a-f]{7,64}\Z")


class ModuleSources:
    def __init__(
        self,
        connections: RepositoryConnections,
        forge: Forge,
        modules: RegistryModuleService,
        versions: ModuleVersionService,
        files: CommitFiles,
    ) -> None:
        self._connections, self._forge, self._modules, self._versions = connections, forge, modules, versions
        self._files = files

    # POST .../versions ------------------------------------------------------------------------------
    def create_version(
        self, principal: Principal, organization: str, address: tuple[str, str, str], attrs: dict[str, Any]
    ) -> tuple[RegistryModule, ModuleVersion, str | None]:
        """A new version and its upload link; of a branch-based module, the version of `commit-sha` read from its
        repository (no link); a tag-based module's versions are its tags (422)."""
        module = self._modules.get(principal, organization, (PRIVATE, *address), Action.MANAGE_MODULES)
        if module.vcs_repo and not module.branch_based:
            raise Invalid(f"the versions of {module.address} are its repository's tags vX.Y.Z: push a tag")
        if not module.branch_based:
            module, version = self._versions.create(principal, organization, address, attrs)
            return module, version, self._versions.upload_url(module, version)
        number = check_version(attrs.get("version"))
        sha = attrs.get("commit-sha")
        if not isinstance(sha, str) or not COMMIT_RE.match(sha):
            raise Invalid("a branch-based module's version needs the commit-sha of a commit of its repository",
                          pointer="/data/attributes/commit-sha")  # fmt: skip
        repo, access, provider = self._access(module)
        try:
            return module, self._publish(module, repo, access, provider, sha, number), None
        except ForgeError as exc:
            raise Invalid(f"commit {sha} of {repo} cannot be read: {exc.detail}",
                          pointer="/data/attributes/commit-sha") from exc  # fmt: skip

    # the events worker -----------------------------------------------------------------------------
    def on_event(self, event: dict[str, Any]) -> None:
        self.handle(event)

    def handle(self, event: dict[str, Any]) -> ModuleVersion | None:
        """A delivery or a connection of a module published from a repository: the version it published, or None."""
        owner = str(event.get("owner_id") or event.get("workspace_id") or "")
        if not looks_like(owner, "mod"):
            return None
        module = self._modules.load(owner)
        try:
            if module is None or not module.vcs_repo:
                raise NotFound(f"module {owner} is not published from a repository")
            repo, access, provider = self._access(module)
            if event.get("type") == CONNECTED and module.branch_based:
                initial = self._modules.initial_version(module.id)
                branch = str(module.vcs_repo.get("branch") or "")
                return self._publish(module, repo, access, provider, branch, initial) if initial else None
            if event.get("type") == DELIVERY and event.get("event") == "push" and not module.branch_based:
                return self._tag(module, repo, access, provider, event)
        except (ForgeError, TerraceError) as exc:
            log.warning("module %s: %s %s: no version: %s", owner, event.get("type"), event.get("delivery"),
                        exc.detail)  # fmt: skip
        return None

    def _tag(self, module: RegistryModule, repo: str, access: ForgeAccess, provider: str,
             event: dict[str, Any]) -> ModuleVersion | None:  # fmt: skip
        push = vcs_events.Push(event["ref"], event["before"], event["after"], repo, event.get("sender", ""),
                               event.get("compare_url", ""))  # fmt: skip
        version = tag_version(push.tag) if push.tag is not None and push.after != vcs_events.ZERO_SHA else None
        if version is None:
            return None
        commit = self._forge.commit(access, repo, push.tag or "")
        if commit.sha != push.after:
            log.info("module %s: tag %s is at %s, not %s: delivery ignored", module.id, push.tag, commit.sha,
                     push.after)  # fmt: skip
            return None
        return self._publish(module, repo, access, provider, commit.sha, version)

    def _publish(self, module: RegistryModule, repo: str, access: ForgeAccess, provider: str, ref: str,
                 version: str) -> ModuleVersion:  # fmt: skip
        commit = self._forge.commit(access, repo, ref)
        submodules = bool((module.vcs_repo or {}).get("ingress-submodules"))
        archive = self._files.read(access, repo, commit.sha, submodules)
        try:
            published = self._versions.publish_commit(module, version, archive, source_of(provider), commit.sha)
        except Conflict:
            log.info("module %s: version %s exists: %s@%s not published", module.id, version, repo, commit.sha)
            raise
        log.info("module %s: version %s from %s@%s: %s", module.id, version, repo, commit.sha, published.status)
        return published

    def _access(self, module: RegistryModule) -> tuple[str, ForgeAccess, str]:
        connection = self._connections.connection(module.id)
        found = self._connections.access(connection) if connection is not None else None
        if connection is None or found is None:
            raise Invalid(f"module {module.address} has no usable repository connection")
        return connection.identifier, found[1], found[0]
