"""Storage of an organization's tag registry, which gives every tag name it has seen a stable id: the registry
entry (`org#<org key>#tags` / name -> {id, name, created_at}) and the tag (`tag-…` / `tag` -> {organization, name,
created_at}). The names on workspaces (`Workspace.tag_names`) are the truth; the registry only names them.
Reserved tag keys (`ReservedTagKeyStore`) are kept beside them."""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

from terrace.adapters.table import ConditionFailed, Delete, Put, Table, WriteOp
from terrace.domain.ids import looks_like
from terrace.domain.tags import ReservedTagKey

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


# reserved tag keys -------------------------------------------------------------------------------
# The key's entry `org#<org key>#reserved-tag-keys` / key -> {id, disable_overrides, ...} lists the organization's
# keys and claims each once; its pointer `rtk-…` / `rtk` -> {organization, key} finds it by id.
RESERVED_SORT_KEY = "rtk"


def _reserved(org_key: str) -> str:
    return f"org#{org_key}#reserved-tag-keys"


def _reserved_key(item: dict[str, Any], org_key: str) -> ReservedTagKey:
    return ReservedTagKey(item["id"], org_key, item["sk"], bool(item.get("disable_overrides")), item["created_at"],
                          item.get("updated_at", item["created_at"]), int(item.get("version", 1)))  # fmt: skip


def _reserved_items(rtk: ReservedTagKey) -> list[dict[str, Any]]:
    entry = {"pk": _reserved(rtk.organization), "sk": rtk.key, "id": rtk.id, "disable_overrides": rtk.disable_overrides,
             "created_at": rtk.created_at, "updated_at": rtk.updated_at, "version": rtk.version}  # fmt: skip
    return [entry, {"pk": rtk.id, "sk": RESERVED_SORT_KEY, "organization": rtk.organization, "key": rtk.key}]


class ReservedTagKeyStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    def of_organization(self, org_key: str) -> list[ReservedTagKey]:
        """The organization's reserved keys, by key (one query)."""
        return [_reserved_key(item, org_key) for item in self._table.query(_reserved(org_key))]

    def find(self, rtk_id: str) -> ReservedTagKey | None:
        pointer = self._table.get(rtk_id, RESERVED_SORT_KEY) if looks_like(rtk_id, "rtk") else None
        entry = self._table.get(_reserved(pointer["organization"]), pointer["key"]) if pointer else None
        return _reserved_key(entry, pointer["organization"]) if pointer and entry else None

    def create(self, rtk: ReservedTagKey) -> bool:
        """False when the organization reserves the key already."""
        entry, pointer = _reserved_items(rtk)
        try:
            self._table.transact([Put(entry, if_absent=True), Put(pointer, if_absent=True)])
        except ConditionFailed:
            return False
        return True

    def replace(self, current: ReservedTagKey, updated: ReservedTagKey) -> bool:
        """`current` becomes `updated` (a new key moves its entry); False when the new key is taken or it changed."""
        entry, pointer = _reserved_items(dataclasses.replace(updated, version=current.version + 1))
        ops: list[WriteOp] = [Put(pointer)]
        if updated.key != current.key:
            ops += [Put(entry, if_absent=True), Delete(_reserved(current.organization), current.key, current.version)]
        else:
            ops.append(Put(entry, if_version=current.version))
        try:
            self._table.transact(ops)
        except ConditionFailed:
            return False
        return True

    def delete(self, rtk: ReservedTagKey) -> None:
        self._table.transact([Delete(_reserved(rtk.organization), rtk.key), Delete(rtk.id, RESERVED_SORT_KEY)])

    def delete_all_of(self, *, organization: str) -> None:
        for item in self._table.query(_reserved(organization)):
            self._table.delete(item["id"], RESERVED_SORT_KEY)
            self._table.delete(item["pk"], item["sk"])
