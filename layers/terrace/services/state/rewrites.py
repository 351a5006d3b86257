"""Writes that replace a workspace's state wholesale: a rollback to an older version and the http backend's writes
and deletion (`StateVersionService`'s part, `versions.py`). A Hold Your Own Key workspace refuses both (the server
would write a state it cannot read)."""

from __future__ import annotations

from terrace.adapters.blobs import BlobStore
from terrace.domain import state as st
from terrace.domain.errors import Conflict, Invalid, NotFound
from terrace.domain.principal import Principal
from terrace.domain.state_versions import FINALIZED, StateVersion
from terrace.domain.workspace import Workspace
from terrace.services.access.authz import Action
from terrace.services.access.organizations import OrganizationService
from terrace.services.state import http_backend as state_http
from terrace.services.state import hyok_state
from terrace.services.state.http_backend import LockRule
from terrace.services.state.store import StateStore
from terrace.services.state.upload_indexing import verified_state
from terrace.services.state.writes import StateWriter
from terrace.services.workspaces.workspaces import WorkspaceService


class StateRewrites:
    _store: StateStore
    _blobs: BlobStore
    _workspaces: WorkspaceService
    _orgs: OrganizationService
    _writer: StateWriter

    def _find(self, sv_id: str) -> StateVersion:
        raise NotImplementedError

    @staticmethod
    def _require_lock(principal: Principal) -> LockRule:
        raise NotImplementedError

    def _check_size(self, size: int, http_backend: bool = False) -> None:
        raise NotImplementedError

    def rollback(self, principal: Principal, workspace_id: str, target_id: str) -> StateVersion:
        ws = self._workspaces.get(principal, workspace_id, Action.WRITE_STATE)
        self._require_lock(principal)(ws)
        target = self._find(target_id)
        if target.workspace_id != ws.id:
            raise NotFound(f"state version {target_id} not found in workspace {ws.name}")
        if target.status != FINALIZED:
            raise Conflict(f"state version {target_id} is {target.status}; only finalized versions can be restored")
        target.require_data()
        if hyok_state.is_hyok(ws) or target.hyok_data_key_id:
            raise Invalid(
                f"workspace {ws.name}'s state is encrypted with its organization's key: the server cannot "
                "roll it back (it would rewrite a state it cannot read); apply the older configuration"
            )
        raw = st.with_serial(verified_state(self._blobs, target), (ws.state_serial or 0) + 1)
        return self._writer.store(principal, ws.id, raw, st.parse_state(raw), True, None, self._require_lock(principal))

    def resolve_workspace(
        self, principal: Principal, organization: str, name: str, create: bool = False
    ) -> Workspace | None:
        return state_http.resolve_workspace(self._orgs, self._workspaces, principal, organization, name, create)

    def write_http(
        self, principal: Principal, organization: str, name: str, raw: bytes, lock_id: str | None
    ) -> StateVersion:
        """The http backend's POST: the body is the raw state, checked before the first POST creates the
        workspace; `?ID=` (`lock_id`) must name the lock held (see `state_http.http_lock_rule`)."""
        self._check_size(len(raw), http_backend=True)
        parsed = st.parse_state(raw)
        ws = self.resolve_workspace(principal, organization, name, create=True)
        assert ws is not None
        self._workspaces.authorize(principal, Action.WRITE_STATE, ws)
        if hyok_state.is_hyok(ws):
            raise hyok_state.refuse_plain(ws, "the http backend's state")
        return self._writer.store(
            principal, ws.id, raw, parsed, False, None, state_http.http_lock_rule(principal, lock_id, organization)
        )

    def delete_history(self, principal: Principal, ws: Workspace) -> None:
        """Forget every state version of a workspace (http backend DELETE). Refused while it is locked."""
        self._workspaces.authorize(principal, Action.DELETE_WORKSPACE, ws)

        self._workspaces.mutate(ws.id, state_http.forget_state)
        self._store.delete_all_of(workspace=ws.id)
