"""What Terrace derives from state versions: per-version outputs and the resource index of current states
(stored by `store_index.py`).

Each resource item carries the state version it was indexed from; readers only show items of the workspace's
current version, so a half-replaced index is never mixed into answers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from terrace.domain.state import OutputValue, ResourceInstance
from terrace.domain.state_index import IndexedResource, StoredOutput
from terrace.domain.workspace import Workspace
from terrace.services.state.store import StateStore


class StateIndex:
    def __init__(self, store: StateStore) -> None:
        self._store = store.index

    # outputs -----------------------------------------------------------------------------
    def write_outputs(self, sv_id: str, ws: Workspace, outputs: Iterable[OutputValue]) -> tuple[str, ...]:
        return self._store.put_outputs(sv_id, ws, outputs)

    def outputs_of(self, sv_id: str) -> list[StoredOutput]:
        return self._store.outputs(sv_id)

    def output(self, wos_id: str) -> StoredOutput:
        return self._store.output(wos_id)

    def delete_outputs(self, sv_id: str) -> None:
        self._store.delete_outputs(sv_id)

    # resources ---------------------------------------------------------------------------
    def replace_resources(
        self,
        load: Callable[[], Workspace],
        instances_of: Callable[[str], tuple[ResourceInstance, ...]],
        attempts: int = 5,
    ) -> None:
        """Make the index match the workspace's current version; repeat if it changed meanwhile."""
        for _ in range(attempts):
            ws = load()
            target = ws.current_state_version_id
            instances = instances_of(target) if target else ()
            self._store.replace_resources(ws, target or "", instances)
            if load().current_state_version_id == target:
                return

    def resources(self, ws: Workspace) -> list[IndexedResource]:
        found = self._store.resources(ws.id)
        return [r for r in found if ws.current_state_version_id and r.indexed_from == ws.current_state_version_id]

    def search(
        self, organization: str, readable: list[Workspace], text: str = "", type_: str = "", provider: str = ""
    ) -> list[IndexedResource]:
        current = {ws.id: ws.current_state_version_id for ws in readable if ws.current_state_version_id}
        text, provider = text.lower(), provider.lower()
        hits = []
        for res in self._store.resources_in(organization):
            if current.get(res.workspace_id) != res.indexed_from:
                continue
            if (type_ and res.type != type_) or (provider and provider not in res.provider.lower()):
                continue
            if text and not res.matches(text):
                continue
            hits.append(res)
        return hits
