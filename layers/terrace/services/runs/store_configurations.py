"""The run store's configuration versions (`store.py`: `RunStore.configurations`): one item each (`cv-…`, sort
key `cv`), listed per workspace through gsi1 (`<workspace>#cvs`, by creation time), replaced only from the version
read."""

from __future__ import annotations

import dataclasses
from typing import Any

from terrace.adapters.table import Table
from terrace.domain.configuration_versions import ConfigurationVersion
from terrace.domain.ids import looks_like

SORT_KEY = "cv"


def configuration_to_item(cv: ConfigurationVersion) -> dict[str, Any]:
    item = dataclasses.asdict(cv)
    item.update(pk=cv.id, sk=SORT_KEY, gsi1pk=f"{cv.workspace_id}#cvs", gsi1sk=cv.created_at + cv.id)
    return item


def configuration_from_item(item: dict[str, Any]) -> ConfigurationVersion:
    names = {f.name for f in dataclasses.fields(ConfigurationVersion)}
    return ConfigurationVersion(**{k: v for k, v in item.items() if k in names})


class ConfigurationStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    def find(self, cv_id: str) -> ConfigurationVersion | None:
        """None for an id that is not a configuration version's (nothing read) or one that is not stored."""
        return self.read(cv_id) if looks_like(cv_id, "cv") else None

    def read(self, cv_id: str) -> ConfigurationVersion | None:
        """The stored version of `cv_id`, whatever the id looks like (one read)."""
        item = self._table.get(cv_id, SORT_KEY)
        return configuration_from_item(item) if item else None

    def of_workspace(self, workspace_id: str, *, newest_first: bool = False) -> list[ConfigurationVersion]:
        items = self._table.query(f"{workspace_id}#cvs", index="gsi1", reverse=newest_first)
        return [configuration_from_item(item) for item in items]

    def create(self, cv: ConfigurationVersion) -> None:
        """Raises ConditionFailed when the id is taken."""
        self._table.put(configuration_to_item(cv), if_absent=True)

    def replace(self, updated: ConfigurationVersion, expected_version: int) -> None:
        """Write `updated` (its version already the next one) if the stored one is still `expected_version`; raises
        ConditionFailed otherwise."""
        self._table.put(configuration_to_item(updated), if_version=expected_version)

    def delete(self, cv: ConfigurationVersion) -> None:
        self._table.delete(cv.id, SORT_KEY)
