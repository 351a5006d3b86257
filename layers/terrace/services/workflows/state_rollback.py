"""Rolling a workspace's state back from the web UI: a workflow across the workspaces area (the lock, taken
here when nobody holds it and released after) and the state area (the rollback itself, which requires the
caller to hold the lock)."""

from __future__ import annotations

from terrace.domain.errors import NotFound
from terrace.domain.principal import Principal
from terrace.domain.state_versions import StateVersion
from terrace.domain.workspace import Workspace
from terrace.services.state.versions import StateVersionService
from terrace.services.workspaces.locking import LockService
from terrace.services.workspaces.workspaces import WorkspaceService


class StateRollback:
    def __init__(self, workspaces: WorkspaceService, locks: LockService, state_versions: StateVersionService) -> None:
        self._workspaces, self._locks, self._state_versions = workspaces, locks, state_versions

    def target(self, principal: Principal, ws: Workspace, sv_id: str) -> StateVersion:
        """A state version of `ws` the caller may read; another workspace's is as absent."""
        sv = self._state_versions.get(principal, sv_id)
        if sv.workspace_id != ws.id:
            raise NotFound(f"state version {sv_id} not found")
        return sv

    def confirmation(
        self, principal: Principal, organization: str, name: str, sv_id: str
    ) -> tuple[Workspace, StateVersion]:
        """The workspace (as it is now) and the state version a rollback would restore: what its page shows."""
        ws = self._workspaces.get_by_name(principal, organization, name)
        return ws, self.target(principal, ws, sv_id)

    def rollback_under_lock(self, principal: Principal, organization: str, name: str, sv_id: str) -> StateVersion:
        """Lock the workspace if nobody holds it, roll back to `sv_id`, release the lock taken here (a lock
        held by the caller is used and kept; anyone else's refuses: `Conflict`). Returns the restored version."""
        ws, sv = self.confirmation(principal, organization, name, sv_id)
        took_lock = ws.lock is None
        if took_lock:
            self._locks.lock(principal, ws, f"rolling back to state serial {sv.serial} (web UI)")
        try:
            return self._state_versions.rollback(principal, ws.id, sv.id)
        finally:
            if took_lock:
                self._locks.unlock(principal, self._workspaces.load(ws.id))
