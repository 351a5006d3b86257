"""Change requests of workspaces: made in bulk for the workspaces an explorer query found (the use case is
`services/workflows/explorer.py`'s `change_requests`), read by whoever may read the workspace, archived by whoever
may change it. Making them needs the organization-wide right to change workspaces (owners, and teams that manage
all workspaces), as HCP Terraform's."""

from __future__ import annotations

import builtins
import dataclasses

from terrace.domain import clock
from terrace.domain.change_requests import PREFIX, TARGETS_MAX, ChangeRequest
from terrace.domain.errors import Forbidden, Invalid, NotFound
from terrace.domain.ids import new_id
from terrace.domain.principal import Principal
from terrace.domain.workspace import Workspace
from terrace.services.access.actions import Action
from terrace.services.optimistic import optimistic
from terrace.services.workspaces.store_change_requests import ChangeRequestStore
from terrace.services.workspaces.workspaces import WorkspaceService


class ChangeRequestService:
    def __init__(self, store: ChangeRequestStore, workspaces: WorkspaceService) -> None:
        self._store, self._workspaces = store, workspaces

    def may_create(self, principal: Principal, organization: str) -> bool:
        """Whether the caller may make change requests in the organization (NotFound unless they may read it)."""
        return self._workspaces.organization_grant(principal, organization, Action.UPDATE_WORKSPACE)[1]

    def create_for(
        self, principal: Principal, organization: str, targets: list[Workspace], subject: str, message: str
    ) -> list[ChangeRequest]:
        """One change request on each of `targets` (workspaces of `organization` the caller reads)."""
        if not self.may_create(principal, organization):
            raise Forbidden("making change requests needs the right to manage every workspace of the organization")
        if len(targets) > TARGETS_MAX:
            raise Invalid(f"a change request reaches at most {TARGETS_MAX} workspaces; this query finds {len(targets)}")
        made = []
        now = clock.now_iso()
        for ws in targets:
            cr = ChangeRequest(new_id(PREFIX), ws.id, ws.organization, subject, message, now, principal.subject_id)
            self._store.create(cr)
            made.append(cr)
        return made

    def list(self, principal: Principal, workspace_id: str) -> list[ChangeRequest]:
        ws = self._workspaces.get(principal, workspace_id)
        return self._store.of_workspace(ws.id)

    def open_of(self, ws: Workspace) -> builtins.list[ChangeRequest]:
        """A workspace's change requests not archived (for its page, whose read already checked the caller)."""
        return [cr for cr in self._store.of_workspace(ws.id) if cr.archived_at is None]

    def get(self, principal: Principal, cr_id: str, action: Action = Action.READ_WORKSPACE) -> ChangeRequest:
        missing = NotFound(f"change request {cr_id} not found")
        cr = self._store.find(cr_id)
        if cr is None:
            raise missing
        try:
            self._workspaces.get(principal, cr.workspace_id, action)
        except NotFound as exc:
            raise missing from exc
        return cr

    def archive(self, principal: Principal, cr_id: str) -> ChangeRequest:
        """Archived once (a second archive answers it as it is); a reader who may not change it is refused."""

        def step() -> ChangeRequest:
            cr = self.get(principal, cr_id, Action.UPDATE_WORKSPACE)
            if cr.archived_at is not None:
                return cr
            archived = dataclasses.replace(cr, archived_at=clock.now_iso(), archived_by=principal.subject_id,
                                           version=cr.version + 1)  # fmt: skip
            self._store.replace(archived, cr.version)
            return archived

        return optimistic(step, exhausted=f"change request {cr_id} changed repeatedly; retry")
