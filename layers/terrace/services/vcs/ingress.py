"""A verified delivery's work (the `vcs.delivery` subscriber, run by the events worker): a configuration version
of the commit, and its run.

- A push to the tracked branch (the workspace's `branch`, else the repository's default branch), or of a tag its
  `tags-regex` matches, whose SHA is still the ref's head on the forge's API (a late or replayed delivery of an
  older push starts nothing; the commit's message and author are read there too), `[ci
  skip]`/`[skip ci]` skip it, file triggers are decided on the files the forge's compare API lists (`domain/
  vcs_events.py: triggered`); then the forge's tarball of that SHA becomes the version's archive (`archives.py`)
  and the version queues its run (auto-applied when the workspace auto-applies).
- Once a run is decided, before the archive is read, its runner is started (`expect_runner`, as a configuration
  version created through the API does): the forge's download, the archive's upload and the run's creation overlap
  the runner's start (on AWS a Fargate task's placement and pull) instead of preceding it.
- A pull request opened, synchronized or reopened against the tracked branch: a speculative plan of its head
  commit, unless the workspace turned speculative plans off; one from a fork only when the organization allows
  it, and then without any sensitive variable (`ConfigurationVersion.untrusted`). With the organization's
  speculative plan management, the pull request's older speculative plans that still run are canceled.
Every failure is logged and ends the delivery's work: the forge shows no status for a commit Terrace did not plan.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from terrace.adapters.forge import Forge, ForgeAccess, ForgeError
from terrace.domain import tenant_regex, vcs_events
from terrace.domain.configuration_versions import ConfigurationVersion
from terrace.domain.errors import NotFound, TerraceError
from terrace.domain.ids import looks_like
from terrace.domain.runs import Run
from terrace.domain.vcs import VCS_REPO, source_of
from terrace.domain.workspace import Workspace
from terrace.services.access.organizations import OrganizationService
from terrace.services.runs.configuration_versions import ConfigurationVersionService
from terrace.services.runs.runs import RunService
from terrace.services.vcs.commit_files import CommitFiles
from terrace.services.vcs.connections import RepositoryConnections
from terrace.services.workspaces.workspaces import WorkspaceService

log = logging.getLogger("terrace.vcs")


class VcsIngress:
    def __init__(
        self,
        connections: RepositoryConnections,
        forge: Forge,
        workspaces: WorkspaceService,
        organizations: OrganizationService,
        configuration_versions: ConfigurationVersionService,
        runs: RunService,
        files: CommitFiles,
        expect_runner: Callable[[Workspace, bool], object] = lambda _ws, _speculative: None,
    ) -> None:
        self._connections, self._forge, self._workspaces, self._orgs = connections, forge, workspaces, organizations
        self._cvs, self._runs, self._files = configuration_versions, runs, files
        # a run was decided: start its runner before the forge's archive is read (its start overlaps the download)
        self._expect_runner = expect_runner

    def on_event(self, event: dict[str, Any]) -> None:
        self.handle(event)

    def handle(self, event: dict[str, Any]) -> ConfigurationVersion | None:
        if not looks_like(str(event.get("workspace_id")), "ws"):
            return None  # a policy set's or a registry module's delivery (`services/workflows/vcs_sources.py`)
        try:
            ws = self._workspaces.load(str(event.get("workspace_id")))
        except NotFound:
            return None
        connection = self._connections.connection(ws.id)
        found = self._connections.access(connection) if connection else None
        if connection is None or found is None:
            log.info("workspace %s: delivery %s: no usable repository connection", ws.id, event.get("delivery"))
            return None
        provider, access = found
        try:
            if event.get("event") == "push":
                return self._push(ws, connection.identifier, access, provider, event)
            if event.get("event") == "pull_request":
                return self._pull_request(ws, connection.identifier, access, provider, event)
        except (ForgeError, TerraceError) as exc:
            log.warning("workspace %s: delivery %s: no run: %s", ws.id, event.get("delivery"), exc.detail)
        return None

    def _tracked(self, ws: Workspace, repo: str, access: ForgeAccess) -> str:
        branch = str((ws.extra.get(VCS_REPO) or {}).get("branch") or "")
        return branch or self._forge.repository(access, repo).default_branch

    def _push(self, ws: Workspace, repo: str, access: ForgeAccess, source: str, event: dict[str, Any]) -> Any:
        push = vcs_events.Push(event["ref"], event["before"], event["after"], repo, event.get("sender", ""),
                               event.get("compare_url", ""))  # fmt: skip
        if push.tag is not None:
            if not _tag_matches(ws, push.tag):
                return None
        elif push.branch != self._tracked(ws, repo, access):
            return None
        # the ref's head as the forge's API has it now: a delivery of an older push (a late one, or a replay once
        # its id is forgotten) starts nothing; the commit's message and author come from there too
        commit = self._forge.commit(access, repo, push.branch or push.tag or push.after)
        if commit.sha != push.after:
            log.info("workspace %s: %s is at %s, not %s: delivery ignored", ws.id, push.ref, commit.sha, push.after)
            return None
        if vcs_events.skipped(commit.message):
            log.info("workspace %s: commit %s skipped ([ci skip])", ws.id, commit.sha)
            return None
        if push.branch is not None and ws.extra.get("file-triggers-enabled", True):
            files = (
                None
                if push.before == vcs_events.ZERO_SHA
                else self._forge.changed_files(access, repo, push.before, commit.sha)
            )
            if not self._triggers(ws, files):
                log.info("workspace %s: commit %s changes no trigger path", ws.id, commit.sha)
                return None
        ingress = ingress_attributes(repo, commit.sha, commit.message, commit.html_url, push.sender, access)
        ingress.update({"branch": push.branch, "tag": push.tag, "compare-url": push.compare_url or None,
                        "on-default-branch": push.branch is not None})  # fmt: skip
        # HCP's queue-all-runs off: a workspace's first runs wait for one queued by hand; its configuration is kept
        queue = ws.queue_all_runs or ws.runs_count > 0
        if queue:
            self._expect_runner(ws, False)
        archive = self._archive(ws, repo, access, commit.sha)
        return self._cvs.create_from_forge(ws, archive, source=source_of(source), speculative=False, ingress=ingress,
                                           untrusted=False, auto_queue=queue, cv_id=_cv_id(ws, event))  # fmt: skip

    def _pull_request(self, ws: Workspace, repo: str, access: ForgeAccess, source: str, event: dict[str, Any]) -> Any:
        if not ws.speculative_enabled or event.get("base_ref") != self._tracked(ws, repo, access):
            return None
        settings = self._orgs.by_key(ws.organization).settings
        if event.get("fork") and settings.get("fork-pull-request-plans-enabled") is not True:
            log.info("workspace %s: pull request %s from a fork: no plan", ws.id, event.get("number"))
            return None
        commit = self._forge.commit(access, repo, str(event["head_sha"]))
        if ws.extra.get("file-triggers-enabled", True):
            if not self._triggers(ws, self._forge.pull_files(access, repo, int(event["number"]))):
                return None
        sender = str(event.get("sender", ""))
        ingress = ingress_attributes(repo, commit.sha, commit.message, commit.html_url, sender, access)
        ingress.update({"branch": event.get("head_ref"), "is-pull-request": True,
                        "pull-request-number": event["number"], "pull-request-url": event.get("url"),
                        "pull-request-title": event.get("title")})  # fmt: skip
        if settings.get("speculative-plan-management-enabled", True) is not False:
            self._cancel_older(ws, int(event["number"]), commit.sha)
        self._expect_runner(ws, True)
        archive = self._archive(ws, repo, access, commit.sha)
        return self._cvs.create_from_forge(ws, archive, source=source_of(source), speculative=True, ingress=ingress,
                                           untrusted=bool(event.get("fork")), cv_id=_cv_id(ws, event))  # fmt: skip

    def _archive(self, ws: Workspace, repo: str, access: ForgeAccess, sha: str) -> bytes:
        submodules = bool((ws.extra.get(VCS_REPO) or {}).get("ingress-submodules"))
        return self._files.read(access, repo, sha, submodules)

    def _triggers(self, ws: Workspace, files: list[str] | None) -> bool:
        extra = ws.extra
        return vcs_events.triggered(
            files, ws.working_directory, extra.get("trigger-prefixes"), extra.get("trigger-patterns")
        )

    def _cancel_older(self, ws: Workspace, number: int, sha: str) -> None:
        def superseded(run: Run) -> bool:
            ingress = self._cvs.load(run.configuration_version_id).ingress or {}
            return ingress.get("pull-request-number") == number and ingress.get("commit-sha") != sha

        for run in self._runs.cancel_superseded(ws.id, superseded):
            log.info("workspace %s: run %s superseded by commit %s of pull request %s", ws.id, run.id, sha, number)


def _tag_matches(ws: Workspace, tag: str) -> bool:
    """The workspace's tags regex on `tag`, run with a timeout: one that runs out of it starts nothing (logged)."""
    try:
        return vcs_events.tag_matches((ws.extra.get(VCS_REPO) or {}).get("tags-regex"), tag)
    except tenant_regex.PatternTimedOut as exc:
        log.warning("workspace %s: tag %s starts nothing: %s", ws.id, tag[:128], exc)
        return False


def _cv_id(ws: Workspace, event: dict[str, Any]) -> str:
    return vcs_events.delivery_cv_id(ws.id, str(event.get("delivery")))


def ingress_attributes(
    repo: str, sha: str, message: str, commit_url: str, sender: str, access: ForgeAccess
) -> dict[str, Any]:
    """HCP's ingress attributes (the pull request's and the push's own are added by the callers)."""
    return {
        "identifier": repo, "commit-sha": sha, "commit-message": message[:4096], "commit-url": commit_url,
        "sender-username": sender, "clone-url": None, "is-pull-request": False, "branch": None, "tag": None,
        "compare-url": None, "on-default-branch": False, "pull-request-number": None, "pull-request-url": None,
        "pull-request-title": None, "pull-request-body": None, "sender-avatar-url": None, "sender-html-url": None,
    }  # fmt: skip
