"""Policy sets from a repository (a subscriber of the VCS area's events, run by the events worker): the `vcs.delivery`
of a push to a set's repository and the `vcs.connected` of a set just connected (or pointed at another branch or
`policies-path`) make a policy set version from the tracked branch's head.

A push counts when it is to the tracked branch (the set's `branch`, else the repository's default branch), its SHA
is still the branch's head on the forge's API (a late or replayed delivery of an older push makes nothing), and,
with a `policies-path`, it changed a file below it (as the forge's compare API lists them; a forge that cannot say
counts as a change). The forge's tarball of that SHA is read with the bounded archive reader (`services/vcs/
archives.py`: the policies path's files only, relative to it), then read again as any policy set version is
(`services/policies/versions.py`: `bundles.py`'s bounds, the OPA compile) and becomes the set's current version when
it is ready. Every failure is logged and ends the work: the set keeps its current version."""

from __future__ import annotations

import logging
from typing import Any

from terrace.adapters.forge import Forge, ForgeAccess, ForgeError
from terrace.domain import vcs_events
from terrace.domain.errors import TerraceError
from terrace.domain.ids import looks_like
from terrace.domain.policies import PolicySet
from terrace.domain.vcs import source_of
from terrace.services.policies.bundles import ARCHIVE_MAX_BYTES
from terrace.services.policies.policy_sets import PolicySetService
from terrace.services.policies.versions import PolicySetVersionService
from terrace.services.vcs.commit_files import CommitFiles
from terrace.services.vcs.connections import CONNECTED, RepositoryConnections
from terrace.services.vcs.ingress import ingress_attributes
from terrace.services.vcs.webhooks import DELIVERY

log = logging.getLogger("terrace.vcs")


class PolicySetSources:
    def __init__(
        self,
        connections: RepositoryConnections,
        forge: Forge,
        policy_sets: PolicySetService,
        versions: PolicySetVersionService,
        files: CommitFiles,
    ) -> None:
        self._connections, self._forge, self._sets, self._versions = connections, forge, policy_sets, versions
        self._files = files

    def on_event(self, event: dict[str, Any]) -> Any:
        """A delivery or a connection of a policy set (others are the workspace ingress's): its new version, or None."""
        owner = str(event.get("owner_id") or event.get("workspace_id") or "")
        if not looks_like(owner, "polset"):
            return None
        ps = self._sets.load(owner)
        connection = self._connections.connection(owner)
        found = self._connections.access(connection) if connection is not None else None
        if ps is None or not ps.vcs_repo or connection is None or found is None:
            log.info("policy set %s: %s: no usable repository connection", owner, event.get("type"))
            return None
        provider, access = found
        repo = connection.identifier
        try:
            branch = str(ps.vcs_repo.get("branch") or "") or self._forge.repository(access, repo).default_branch
            if event.get("type") == CONNECTED:
                return self._ingest(ps, repo, access, provider, branch, None)
            if event.get("type") == DELIVERY and event.get("event") == "push":
                return self._push(ps, repo, access, provider, branch, event)
        except (ForgeError, TerraceError) as exc:
            log.warning("policy set %s: %s %s: no version: %s", owner, event.get("type"), event.get("delivery"),
                        exc.detail)  # fmt: skip
        return None

    def _push(self, ps: PolicySet, repo: str, access: ForgeAccess, provider: str, branch: str,
              event: dict[str, Any]) -> Any:  # fmt: skip
        push = vcs_events.Push(event["ref"], event["before"], event["after"], repo, event.get("sender", ""),
                               event.get("compare_url", ""))  # fmt: skip
        if push.branch is None or push.branch != branch:
            return None
        if ps.policies_path and push.before != vcs_events.ZERO_SHA:
            files = self._forge.changed_files(access, repo, push.before, push.after)
            if files is not None and not any(f.startswith(f"{ps.policies_path}/") for f in files):
                log.info("policy set %s: commit %s changes nothing below %s", ps.id, push.after, ps.policies_path)
                return None
        return self._ingest(ps, repo, access, provider, branch, push)

    def _ingest(self, ps: PolicySet, repo: str, access: ForgeAccess, provider: str, branch: str,
                push: vcs_events.Push | None) -> Any:  # fmt: skip
        commit = self._forge.commit(access, repo, branch)
        if push is not None and commit.sha != push.after:
            log.info("policy set %s: %s is at %s, not %s: delivery ignored", ps.id, branch, commit.sha, push.after)
            return None
        submodules = bool((ps.vcs_repo or {}).get("ingress-submodules"))
        archive = self._files.read(access, repo, commit.sha, submodules, ps.policies_path)
        if len(archive) > ARCHIVE_MAX_BYTES:
            raise TerraceError(f"the policies of {repo} at {commit.sha} are larger than {ARCHIVE_MAX_BYTES} bytes")
        sender = push.sender if push is not None else commit.author
        ingress = ingress_attributes(repo, commit.sha, commit.message, commit.html_url, sender, access)
        ingress.update({"branch": branch, "on-default-branch": True,
                        "compare-url": (push.compare_url or None) if push is not None else None})  # fmt: skip
        version = self._versions.create_from_commit(ps, archive, source_of(provider), ingress)
        log.info("policy set %s: version %s from %s@%s: %s", ps.id, version.id, repo, commit.sha, version.status)
        return version
