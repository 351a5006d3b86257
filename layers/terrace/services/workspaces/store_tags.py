"""Storage of an organization's tag registry, which gives every tag name it has seen a stable id: the registry
entry (`org#<org key>#tags` / name -> {id, name, created_at}) and the tag (`tag-…` / `tag` -> {organization, name,
created_at}). The names on workspaces (`Workspace.tag_names`) are the truth; the registry only names them."""

from __future__ import annotations

from typing import Any, NamedTuple

from terrace.adapters.table import ConditionFailed, Table
from terrace.domain.ids import looks_like

SORT_KEY = "tag"


def _registry(org_key: str) -> str:
    return f"org#{org_key}#tags"


class RegisteredTag(NamedTuple):
    id: str
    organization: str  # the organization's key
    name: str
    created_at: str


def _entry(org_key: str, item: dict[str, Any]) -> RegisteredTag:
    return RegisteredTag(item["id"], org_key, item["name"], item["created_at"])


class TagStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    def registered(self, org_key: str) -> dict[str, RegisteredTag]:
        """The organization's registry, by name (one query)."""
        return {item["sk"]: _entry(org_key, item) for item in self._table.query(_registry(org_key))}

    def find(self, tag_id: str) -> RegisteredTag | None:
        item = self._table.get(tag_id, SORT_KEY) if looks_like(tag_id, "tag") else None
        if item is None:
            return None
        return RegisteredTag(tag_id, item["organization"], item["name"], item.get("created_at", ""))

    def register(self, tag: RegisteredTag) -> RegisteredTag:
        """Give `tag.name` the id `tag.id`, unless another writer gave it one first (that one is returned)."""
        entry = {"pk": _registry(tag.organization), "sk": tag.name, "id": tag.id, "name": tag.name,
                 "created_at": tag.created_at}  # fmt: skip
        try:
            self._table.put(entry, if_absent=True)
        except ConditionFailed:
            winner = self._table.get(entry["pk"], tag.name)
            if winner is None:
                raise
            return _entry(tag.organization, winner)
        self._table.put({"pk": tag.id, "sk": SORT_KEY, "organization": tag.organization, "name": tag.name,
                         "created_at": tag.created_at})  # fmt: skip
        return tag

    def delete(self, org_key: str, name: str) -> None:
        """A name out of the registry (its tag, then its entry)."""
        item = self._table.get(_registry(org_key), name)
        if item is not None:
            self._table.delete(item["id"], SORT_KEY)
            self._table.delete(item["pk"], item["sk"])

    def delete_all_of(self, *, organization: str) -> None:
        for item in self._table.query(_registry(organization)):
            self._table.delete(item["id"], SORT_KEY)
            self._table.delete(item["pk"], item["sk"])
