"""Storage of the deployment's tool version records (`tool-…`, sort key `tool`, listed per tool through gsi1
`tools#<tool>` in version order) and of the claim that makes each version of a tool unique
(`tools#<tool>#versions` / the version). The only module of `services/admin/` that knows the table.

A record is a plain dict of its attributes (`id`, `tool`, `tool_version`, `version` — the optimistic counter —,
`created_at`, the flags, `url`, `sha`, `archs`, `deprecated_reason`); the keys are added here on every write.
Tool versions belong to the deployment, not to an organization or workspace: nothing is purged with either."""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import Any

from terrace.adapters.table import ConditionFailed, Delete, Put, Table, WriteOp
from terrace.domain import tool_versions as tv
from terrace.domain.ids import looks_like

SORT_KEY = "tool"
KEYS = ("pk", "sk", "gsi1pk", "gsi1sk")


def listed_under(tool: str) -> str:
    return f"tools#{tool}"


def claim_key(tool: str, version: str) -> tuple[str, str]:
    return f"tools#{tool}#versions", version


def to_item(record: dict[str, Any]) -> dict[str, Any]:
    keys = {"pk": record["id"], "sk": SORT_KEY}
    keys.update(gsi1pk=listed_under(record["tool"]), gsi1sk=tv.sort_key(record["tool_version"]))
    return {**{k: v for k, v in record.items() if k not in KEYS}, **keys}


def from_item(item: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in item.items() if k not in KEYS}


class ToolVersionStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    def claimed(self, tool: str, version: str) -> bool:
        """Whether `tool` has a record of `version`."""
        return self._table.get(*claim_key(tool, version)) is not None

    def list(self, tool: str) -> builtins.list[dict[str, Any]]:
        """The records of `tool`, newest version first."""
        return [from_item(item) for item in self._table.query(listed_under(tool), index="gsi1", reverse=True)]

    def find(self, record_id: str) -> dict[str, Any] | None:
        item = self._table.get(record_id, SORT_KEY) if looks_like(record_id, "tool") else None
        return from_item(item) if item is not None else None

    def create(self, record: dict[str, Any]) -> bool:
        """Record a new version with its claim; False when the tool has a record of that version already."""
        claim_pk, claim_sk = claim_key(record["tool"], record["tool_version"])
        claim = {"pk": claim_pk, "sk": claim_sk, "id": record["id"]}
        try:
            self._table.transact([Put(claim, if_absent=True), Put(to_item(record), if_absent=True)])
        except ConditionFailed:
            return False
        return True

    def replace(self, record: dict[str, Any], expected_version: int, old_version: str) -> bool:
        """Write `record` over the one read (`expected_version`), moving the claim from `old_version` when its
        version changed; False when the record changed meanwhile or the new version is taken."""
        ops: builtins.list[WriteOp] = [Put(to_item(record), if_version=expected_version)]
        if record["tool_version"] != old_version:
            claim_pk = claim_key(record["tool"], old_version)[0]
            ops += [
                Delete(*claim_key(record["tool"], old_version)),
                Put({"pk": claim_pk, "sk": record["tool_version"], "id": record["id"]}, if_absent=True),
            ]
        try:
            self._table.transact(ops)
        except ConditionFailed:
            return False
        return True

    def delete(self, record: Mapping[str, Any]) -> None:
        """The record and its claim (ConditionFailed when the record changed since it was read)."""
        self._table.transact(
            [
                Delete(record["id"], SORT_KEY, if_version=record["version"]),
                Delete(*claim_key(record["tool"], record["tool_version"])),
            ]
        )
