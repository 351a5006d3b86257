"""TFE's backing data of a state version: soft delete (its state file answers 404 and can be restored), restore,
and permanent delete (the files are gone; restoring is then refused). The current state version keeps its data.

Transitions: present -soft_delete-> soft_deleted -restore-> present; soft_deleted -permanently_delete-> deleted.
Anything else is a 409 "transition not allowed" (go-tfe reads that phrase)."""

from __future__ import annotations

import dataclasses

from terrace.adapters.blobs import BlobStore
from terrace.domain.errors import Conflict
from terrace.domain.principal import Principal
from terrace.domain.state_versions import (
    DATA_DELETED,
    DATA_PRESENT,
    DATA_SOFT_DELETED,
    FINALIZED,
    StateVersion,
)
from terrace.services.access.authz import Action
from terrace.services.state.store import StateStore
from terrace.services.state.versions import StateVersionService
from terrace.services.workspaces.workspaces import WorkspaceService

TRANSITIONS = {
    "soft_delete": (DATA_PRESENT, DATA_SOFT_DELETED),
    "restore": (DATA_SOFT_DELETED, DATA_PRESENT),
    "permanently_delete": (DATA_SOFT_DELETED, DATA_DELETED),
}


class BackingDataService:
    def __init__(
        self, store: StateStore, blobs: BlobStore, versions: StateVersionService, workspaces: WorkspaceService
    ) -> None:
        self._store, self._blobs, self._versions, self._workspaces = store, blobs, versions, workspaces

    def change(self, principal: Principal, sv_id: str, action: str) -> StateVersion:
        """`action` is one of TRANSITIONS; owners (DELETE_WORKSPACE on its workspace) only."""
        sv = self._versions.get(principal, sv_id, Action.DELETE_WORKSPACE)
        before, after = TRANSITIONS[action]
        if sv.status != FINALIZED or sv.backing_data != before:
            raise Conflict(f"transition not allowed: the backing data of {sv_id} is {sv.backing_data}, not {before}")
        if after != DATA_PRESENT and self._workspaces.load(sv.workspace_id).current_state_version_id == sv.id:
            raise Conflict(f"transition not allowed: {sv_id} is its workspace's current state version")
        updated = dataclasses.replace(sv, backing_data=after, version=sv.version + 1)
        if not self._store.save_if_unchanged(updated, sv.version):
            raise Conflict(f"state version {sv_id} changed concurrently; retry")
        if after == DATA_DELETED:
            for key in (sv.blob_key, sv.json_blob_key, sv.sanitized_blob_key):
                self._blobs.delete(key)
        return updated
