"""What the state index holds: outputs of state versions and the resources of current states."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class StoredOutput:
    id: str
    state_version_id: str
    workspace_id: str
    organization: str
    name: str
    sensitive: bool
    type: str
    detailed_type: Any
    value: Any


@dataclass(frozen=True)
class IndexedResource:
    workspace_id: str
    workspace_name: str
    address: str
    name: str
    type: str
    module: str
    provider: str
    name_index: str | None
    ids: tuple[str, ...]
    created_at: str
    updated_at: str
    modified_by: str
    indexed_from: str

    def matches(self, text: str) -> bool:
        fields = (self.address, self.type, self.provider, self.module, *self.ids)
        return any(text in f.lower() for f in fields)
