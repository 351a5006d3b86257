"""Storage of change requests: one item each (`wscr-…` / `wscr`), listed under gsi1 `<workspace>#change-requests`
by `created#id`; archiving rewrites the item conditionally on its version."""

from __future__ import annotations

import dataclasses
from typing import Any

from terrace.adapters.table import Table
from terrace.domain.change_requests import ChangeRequest

SORT_KEY = "wscr"


def _listed(workspace_id: str) -> str:
    return f"{workspace_id}#change-requests"


def to_item(cr: ChangeRequest) -> dict[str, Any]:
    return {"pk": cr.id, "sk": SORT_KEY, **dataclasses.asdict(cr), "gsi1pk": _listed(cr.workspace_id),
            "gsi1sk": f"{cr.created_at}#{cr.id}"}  # fmt: skip


def from_item(item: dict[str, Any]) -> ChangeRequest:
    names = {f.name for f in dataclasses.fields(ChangeRequest)}
    return ChangeRequest(**{k: v for k, v in item.items() if k in names})


class ChangeRequestStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    def find(self, cr_id: str) -> ChangeRequest | None:
        item = self._table.get(cr_id, SORT_KEY) if cr_id.startswith("wscr-") else None
        return from_item(item) if item else None

    def of_workspace(self, workspace_id: str) -> list[ChangeRequest]:
        """Newest first."""
        return [from_item(i) for i in self._table.query(_listed(workspace_id), index="gsi1", reverse=True)]

    def create(self, cr: ChangeRequest) -> None:
        self._table.put(to_item(cr), if_absent=True)

    def replace(self, updated: ChangeRequest, expected_version: int) -> None:
        self._table.put(to_item(updated), if_version=expected_version)

    def delete_all_of(self, *, workspace: str) -> None:
        items = self._table.query(_listed(workspace), index="gsi1")
        self._table.batch_delete([(item["pk"], item["sk"]) for item in items])
