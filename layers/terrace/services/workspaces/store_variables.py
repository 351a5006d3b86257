"""Storage of workspace variables: the variable (`var-…` / `var`, listed under gsi1 `<ws>#vars` by
`category#key`) and its key claim (`<ws>#varkeys` / `category#key` -> var_id: one key per category in a
workspace). A variable is handled as its record, a dict of its fields (`id`, `workspace_id`, `key`, `category`,
`value` or `ciphertext`, ...); the store adds the keys when it writes."""

from __future__ import annotations

from typing import Any

from terrace.adapters.table import ConditionFailed, Delete, Put, Table
from terrace.domain.ids import looks_like

SORT_KEY = "var"


def stored_fields(item: dict[str, Any]) -> dict[str, Any]:
    """The fields every stored variable has (a workspace's, a variable set's), as its public view: a sensitive
    value is never among them."""
    return {
        "id": item["id"],
        "key": item["key"],
        "category": item["category"],
        "hcl": bool(item["hcl"]),
        "sensitive": bool(item["sensitive"]),
        "description": item.get("description", ""),
        "created_at": item["created_at"],
        "value": None if item["sensitive"] else item.get("value", ""),
        "version_id": item["version_id"],
    }


def _index(workspace_id: str) -> str:
    return f"{workspace_id}#vars"


def _claims(workspace_id: str) -> str:
    return f"{workspace_id}#varkeys"


def _slot(record: dict[str, Any]) -> str:
    return f"{record['category']}#{record['key']}"


def _item(record: dict[str, Any]) -> dict[str, Any]:
    return {
        **record,
        "pk": record["id"],
        "sk": SORT_KEY,
        "gsi1pk": _index(record["workspace_id"]),
        "gsi1sk": _slot(record),
    }


class VariableStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    def of_workspace(self, workspace_id: str) -> list[dict[str, Any]]:
        """The workspace's variables by category and key, sensitive ones as ciphertext."""
        return self._table.query(_index(workspace_id), index="gsi1")

    def find(self, var_id: str) -> dict[str, Any] | None:
        return self._table.get(var_id, SORT_KEY) if looks_like(var_id, "var") else None

    def create(self, record: dict[str, Any]) -> bool:
        """The variable and its key claim; False when the workspace has that key in that category already."""
        claim = {"pk": _claims(record["workspace_id"]), "sk": _slot(record), "var_id": record["id"]}
        try:
            self._table.transact([Put(claim, if_absent=True), Put(_item(record), if_absent=True)])
        except ConditionFailed:
            return False
        return True

    def update(self, record: dict[str, Any], previous: dict[str, Any], expected_version: int) -> bool:
        """The changed variable (its claim moved when its category or key changed); False when the new key is
        taken or the variable changed since `expected_version`. `previous`: the record as read."""
        ops: list[Any] = [Put(_item(record), if_version=expected_version)]
        workspace_id = record["workspace_id"]
        if _slot(record) != _slot(previous):
            claim = {"pk": _claims(workspace_id), "sk": _slot(record), "var_id": record["id"]}
            ops += [Put(claim, if_absent=True), Delete(_claims(workspace_id), _slot(previous))]
        try:
            self._table.transact(ops)
        except ConditionFailed:
            return False
        return True

    def delete(self, record: dict[str, Any]) -> None:
        self._table.transact([Delete(record["id"], SORT_KEY), Delete(_claims(record["workspace_id"]), _slot(record))])

    def delete_all_of(self, *, workspace: str) -> None:
        """A deleted workspace's variables and their key claims."""
        for items in (self._table.query(_index(workspace), index="gsi1"), self._table.query(_claims(workspace))):
            if items:
                self._table.batch_delete([(item["pk"], item["sk"]) for item in items])
