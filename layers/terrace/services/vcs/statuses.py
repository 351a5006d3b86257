"""Commit statuses (the `run.status_changed` subscriber): a run of a configuration version made from a forge's
commit reports on that commit as `Terrace/<organization>/<workspace>` (`POST /repos/{o}/{r}/statuses/{sha}`),
`pending` while it waits, `running` while it runs (GitHub shows it as `pending`; GitLab's
`POST /projects/:id/statuses/:sha` as `running`), then `success` (applied, planned and finished, or planned and
waiting for confirmation), `failure` (errored; GitLab's `failed`) or `error` (canceled, discarded; GitLab's
`canceled`), with a link to the run's page (a pull request's plan names its pull request too: Azure DevOps shows
the pull request's own status). Only a change of what the forge
shows is sent; a forge that fails is logged (the run goes on). An organization with aggregated commit statuses
reports one status per commit for all its workspaces instead (`aggregated_statuses.py`). A pull request's plan then
writes its comment (`comments.py`) when the organization wants one."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from terrace.adapters.forge import CommitStatus, Forge, ForgeError
from terrace.domain import runs as rs
from terrace.domain.errors import NotFound
from terrace.domain.runs import Run
from terrace.services.runs.configuration_versions import ConfigurationVersionService
from terrace.services.vcs import aggregated_statuses
from terrace.services.vcs.aggregated_statuses import AggregatedStatuses
from terrace.services.vcs.comments import PlanComments, body
from terrace.services.vcs.connections import RepositoryConnections
from terrace.services.workspaces.workspaces import WorkspaceService

log = logging.getLogger("terrace.vcs")

_SHOWN: dict[str, tuple[str, str]] = {
    rs.APPLIED: ("success", "Applied"),
    rs.PLANNED_AND_FINISHED: ("success", "Planned"),
    rs.PLANNED: ("success", "Planned: waiting for confirmation"),
    rs.ERRORED: ("failure", "Errored"),
    rs.CANCELED: ("error", "Canceled"),
    rs.FORCE_CANCELED: ("error", "Canceled"),
    rs.DISCARDED: ("error", "Discarded"),
}


def shown(status: str | None) -> tuple[str, str]:
    """What the forge shows for a run's status."""
    if status in (None, "", rs.PENDING):
        return "pending", "Run pending"
    return _SHOWN.get(status or "", ("running", "Running"))


class CommitStatuses:
    def __init__(
        self,
        connections: RepositoryConnections,
        forge: Forge,
        workspaces: WorkspaceService,
        configuration_versions: ConfigurationVersionService,
        load_run: Callable[[str], Run],
        public_url: str,
        comments: PlanComments,
        aggregated: AggregatedStatuses,
    ) -> None:
        self._connections, self._forge, self._workspaces, self._comments = connections, forge, workspaces, comments
        self._aggregated = aggregated
        self._cvs, self._load_run, self._public_url = configuration_versions, load_run, public_url.rstrip("/")

    def on_run_status(self, event: dict[str, Any]) -> None:
        now, before = shown(str(event.get("to"))), shown(event.get("from"))
        if event.get("from") is not None and now == before:
            return
        try:
            run = self._load_run(str(event.get("run_id")))
            cv = self._cvs.load(run.configuration_version_id)
            ws = self._workspaces.load(run.workspace_id)
        except NotFound:
            return
        sha = (cv.ingress or {}).get("commit-sha")
        connection = self._connections.connection(ws.id)
        found = self._connections.access(connection) if connection and sha else None
        if connection is None or found is None or not sha:
            return
        org = self._workspaces.organization_of(ws)
        status = CommitStatus(
            state=now[0], context=f"Terrace/{org.name}/{ws.name}", description=f"Terrace: {now[1]}",
            target_url=f"{self._public_url}/app/{org.name}/workspaces/{ws.name}/runs/{run.id}",
            pull_request=_number((cv.ingress or {}).get("pull-request-number")),
        )  # fmt: skip
        sent = status
        if org.settings.get(aggregated_statuses.SETTING) is True:
            sent = self._aggregated.status(org.key, org.name, ws.id, str(sha), now[0], status.pull_request)
        try:
            self._forge.set_status(found[1], connection.identifier, str(sha), sent)
        except ForgeError as exc:
            log.warning("run %s: commit status %s of %s not set: %s", run.id, sent.state, sha, exc.detail)
        ingress = cv.ingress or {}
        if self._comments.wanted(org.settings, ingress, now[0]):
            text = body(status.context, run, now, str(sha), status.target_url)
            self._comments.write(found[1], ws.id, connection.identifier, int(ingress["pull-request-number"]), text)


def _number(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
