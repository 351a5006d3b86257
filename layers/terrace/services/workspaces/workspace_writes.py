"""A workspace's conditional writes (mixed into `WorkspaceService`): `mutate`, the way other services change a
workspace (read, change, write if unchanged, retried), and the single writes of a hot path that read it already."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from terrace.domain import clock
from terrace.domain.workspace import Workspace
from terrace.services.optimistic import optimistic
from terrace.services.workspaces.store import WorkspaceStore, WriteOp


class WorkspaceWrites:
    _store: WorkspaceStore
    load: Callable[[str], Workspace]

    def mutate(self, workspace_id: str, change: Callable[[Workspace], Workspace], attempts: int = 8) -> Workspace:
        """Apply `change` to the latest copy with optimistic concurrency; `change` may raise to refuse."""

        def step() -> Workspace:
            current = self.load(workspace_id)
            updated = dataclasses.replace(change(current), version=current.version + 1, updated_at=clock.now_iso())
            self._store.replace(updated, current.version)
            return updated

        return optimistic(step, attempts=attempts, exhausted=f"workspace {workspace_id} is busy; retry")

    def write_if_unchanged(self, current: Workspace, updated: Workspace) -> Workspace:
        """Store `updated` (a change of the loaded `current`) in one conditional write; ConditionFailed when
        someone changed it since. For the hot path where a re-read would be wasted (`mutate` re-reads)."""
        stored = dataclasses.replace(updated, version=current.version + 1, updated_at=clock.now_iso())
        self._store.replace(stored, current.version)
        return stored

    def write_if_still(self, current: Workspace, updated: Workspace) -> Workspace | None:
        """`write_if_unchanged`, None when someone changed it since (the caller reads again)."""
        stored = dataclasses.replace(updated, version=current.version + 1, updated_at=clock.now_iso())
        return stored if self._store.replace_if_unchanged(stored, current.version) else None

    def write_op(self, ws: Workspace, expected_version: int) -> WriteOp:
        """A transaction item that stores `ws` only if nobody changed it since `expected_version`."""
        return self._store.put_op(ws, expected_version)
