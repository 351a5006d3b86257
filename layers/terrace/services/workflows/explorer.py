"""The explorer's reads (`GET /organizations/:org/explorer`, its CSV export and the UI's page): one answer across
the workspaces area (the workspaces the caller may read, their projects), the runs area (their latest runs and
current assessments) and the explorer's own summaries (`store_explorer.py`, kept by `explorer_feed.py`).

A caller sees the workspaces they may read, nothing of the others: not in a row, not in a count, not in a
`workspaces` list. What comes from a workspace's runs (its latest run, assessment, configuration's modules and
providers) needs read-runs on it, what comes from its state (the state's terraform version and providers) read-state,
as their own endpoints do. Reads only: nothing is written, nothing computed that a write did not record.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from terrace.domain import explorer as model
from terrace.domain.change_requests import ChangeRequest
from terrace.domain.errors import Invalid, NotFound
from terrace.domain.explorer import Summary, WorkspaceFacts
from terrace.domain.explorer_query import Query
from terrace.domain.principal import Principal
from terrace.services.access.actions import Action
from terrace.services.access.organizations import OrganizationService
from terrace.services.runs.assessments import AssessmentService
from terrace.services.runs.run_queries import RunQueries
from terrace.services.workflows.store_explorer import ExplorerStore
from terrace.services.workspaces.change_requests import ChangeRequestService
from terrace.services.workspaces.workspaces import WorkspaceService


class Explorer:
    def __init__(
        self,
        store: ExplorerStore,
        organizations: OrganizationService,
        workspaces: WorkspaceService,
        run_queries: RunQueries,
        assessments: AssessmentService,
        change_requests: ChangeRequestService,
    ) -> None:
        self._store, self._organizations, self._workspaces = store, organizations, workspaces
        self._run_queries, self._assessments, self._change_requests = run_queries, assessments, change_requests

    def query(self, principal: Principal, organization: str, query: Query) -> list[dict[str, Any]]:
        """The view's rows the caller may see, filtered and sorted (NotFound unless they may read the
        organization)."""
        facts = self.facts(principal, organization)
        if query.type == model.WORKSPACES:
            rows = [model.workspace_row(f) for f in facts]
        elif query.type == model.TF_VERSIONS:
            rows = model.tf_version_rows(facts)
        else:
            rows = model.use_rows(facts, query.type)
        return query.apply(rows)

    def may_request_changes(self, principal: Principal, organization: str) -> bool:
        """Whether the caller may make change requests from the explorer (the page offers its form to them only)."""
        return self._change_requests.may_create(principal, organization)

    def change_requests(
        self,
        principal: Principal,
        organization: str,
        query: Query | None,
        target_ids: list[str] | None,
        subject: str,
        message: str,
    ) -> list[ChangeRequest]:
        """A change request on each workspace the query finds, or on each of `target_ids` (workspaces of the
        organization the caller reads; any other is NotFound), as `POST .../explorer/bulk-actions` asks."""
        found = self.facts(principal, organization)
        by_id = {f.workspace.id: f.workspace for f in found}
        if target_ids is not None:
            unknown = next((ws_id for ws_id in target_ids if ws_id not in by_id), None)
            if unknown is not None:
                raise NotFound(f"workspace {unknown} not found in {organization}")
            targets = [by_id[ws_id] for ws_id in dict.fromkeys(target_ids)]
        else:
            query = query or Query()
            if query.type != model.WORKSPACES:
                raise Invalid("a change request's query is of type workspaces", pointer="/data/attributes/query")
            targets = [by_id[row["id"]] for row in query.apply([model.workspace_row(f) for f in found])]
        return self._change_requests.create_for(principal, organization, targets, subject, message)

    def facts(self, principal: Principal, organization: str) -> list[WorkspaceFacts]:
        org = self._organizations.get(principal, organization)
        readable = self._workspaces.list(principal, organization)
        runs_readable = {ws.id for ws in self._workspaces.allowed(principal, Action.READ_RUNS, readable)}
        state_readable = {ws.id for ws in self._workspaces.allowed(principal, Action.READ_STATE, readable)}
        summaries = self._store.summaries(org.key)
        latest = self._run_queries.current_of(principal, readable)
        results = self._assessments.latest_of(sorted(runs_readable))
        projects: dict[str | None, str] = {}
        found = []
        for ws in readable:
            if ws.project_id not in projects:
                projects[ws.project_id] = self._workspaces.project_name_of(ws)
            summary = _visible(summaries.get(ws.id) or Summary(), ws.id in runs_readable, ws.id in state_readable)
            found.append(
                WorkspaceFacts(
                    ws,
                    projects[ws.project_id],
                    org.name,
                    summary,
                    latest.get(ws.id),
                    results.get(ws.id) if ws.id in runs_readable else None,
                )
            )
        return found


def _visible(summary: Summary, runs: bool, state: bool) -> Summary:
    """What of a summary the caller may see: the configuration's part with read-runs, the state's with read-state."""
    if not runs:
        summary = dataclasses.replace(summary, configuration_version_id="", modules=(), providers=())
    if not state:
        summary = dataclasses.replace(summary, state_version_id="", state_terraform_version="", state_providers=())
    return summary
