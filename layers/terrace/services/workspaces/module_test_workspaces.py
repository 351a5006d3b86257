"""A registry module's test workspace (`domain/module_tests.py`): made the first time the module's tests are
configured, one per module (its id follows from the module's), unlisted and unnamed (`Workspace.module_id`: the
store lists it apart and claims no name; `WorkspaceService.get` finds none; the Authorizer lets only the
organization's module managers reach it), deleted with its module or its organization."""

from __future__ import annotations

import time

from terrace.domain import clock, module_tests
from terrace.domain.errors import Conflict
from terrace.domain.workspace import Workspace
from terrace.services.workspaces.store import WorkspaceStore


class ModuleTestWorkspaces:
    def __init__(self, store: WorkspaceStore) -> None:
        self._store = store

    def of_module(self, org_key: str, module_id: str, name: str, *, create: bool = False) -> Workspace | None:
        """The module's test workspace (None: none yet), made when `create` (a write: a caller that may manage the
        module asked to configure or run its tests)."""
        ws_id = module_tests.test_workspace_id(module_id)
        found = self._store.find(ws_id)
        if found is not None or not create:
            return found if found is not None and found.module_id == module_id else None
        now = clock.now_iso()
        self._store.create_unlisted(  # False when a concurrent call made it: read below either way
            Workspace(
                id=ws_id,
                name=f"module-tests:{name}",  # no workspace name has a colon: it never passes for a real one
                organization=org_key,
                created_at=now,
                updated_at=now,
                version=1,
                execution_mode="remote",  # Terrace's runners run a module's tests, whatever the default
                execution_mode_overwritten=True,
                created_ns=time.time_ns(),
                module_id=module_id,
            )
        )
        return self.of_module(org_key, module_id, name)

    def of_organization(self, org_key: str) -> list[Workspace]:
        """The organization's module test workspaces (its deletion deletes them with the rest)."""
        return self._store.module_tests_of(org_key)

    def drop(self, workspace_id: str) -> None:
        """Delete a deleted module's test workspace item (what it held is purged first, `Purge`)."""
        for _ in range(8):
            ws = self._store.find(workspace_id)
            if ws is None or ws.module_id is None or self._store.delete(ws):
                return
        raise Conflict("workspace changed while deleting; retry")
