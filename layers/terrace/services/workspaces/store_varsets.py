"""Storage of variable sets: the set (`varset-…` / `varset`, listed under gsi1 `org#<org key>#varsets` by name; its
workspaces and projects are lists in it), its name claim (`org#<org key>#varsetnames` / name), and its variables
(`var-…` / `varsetvar`, listed under gsi1 `<varset>#vars` by `category#key`) with their key claims
(`<varset>#varkeys` / `category#key`). A set's variable is handled as its record, a dict of its fields; the store
adds the keys when it writes."""

from __future__ import annotations

from typing import Any

from terrace.adapters.table import ConditionFailed, Delete, Put, Table, WriteOp
from terrace.domain.ids import looks_like
from terrace.domain.varsets import VariableSet, name_taken

SORT_KEY = "varset"
VARIABLE_SORT_KEY = "varsetvar"


def _index(org_key: str) -> str:
    return f"org#{org_key}#varsets"


def _names(org_key: str) -> str:
    return f"org#{org_key}#varsetnames"


def _vars(varset_id: str) -> str:
    return f"{varset_id}#vars"


def _key_claims(varset_id: str) -> str:
    return f"{varset_id}#varkeys"


def _slot(record: dict[str, Any]) -> str:
    return f"{record['category']}#{record['key']}"


def from_item(item: dict[str, Any]) -> VariableSet:
    return VariableSet(
        id=item["id"],
        organization=item["organization"],
        name=item["name"],
        description=item.get("description", ""),
        global_=bool(item.get("global", False)),
        priority=bool(item.get("priority", False)),
        workspace_ids=tuple(item.get("workspace_ids", [])),
        project_ids=tuple(item.get("project_ids", [])),
        created_at=item["created_at"],
        updated_at=item.get("updated_at", item["created_at"]),
        version=int(item["version"]),
    )


def to_item(vs: VariableSet) -> dict[str, Any]:
    return {
        "pk": vs.id,
        "sk": SORT_KEY,
        "gsi1pk": _index(vs.organization),
        "gsi1sk": vs.name,
        "id": vs.id,
        "organization": vs.organization,
        "name": vs.name,
        "description": vs.description,
        "global": vs.global_,
        "priority": vs.priority,
        "workspace_ids": list(vs.workspace_ids),
        "project_ids": list(vs.project_ids),
        "created_at": vs.created_at,
        "updated_at": vs.updated_at,
        "version": vs.version,
    }


def _variable_item(record: dict[str, Any]) -> dict[str, Any]:
    return {
        **record,
        "pk": record["id"],
        "sk": VARIABLE_SORT_KEY,
        "gsi1pk": _vars(record["varset_id"]),
        "gsi1sk": _slot(record),
    }


def _variable_claim(record: dict[str, Any]) -> dict[str, Any]:
    return {"pk": _key_claims(record["varset_id"]), "sk": _slot(record), "var_id": record["id"]}


class VariableSetStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    # sets --------------------------------------------------------------------------------
    def find(self, varset_id: str) -> VariableSet | None:
        item = self._table.get(varset_id, SORT_KEY) if looks_like(varset_id, "varset") else None
        return from_item(item) if item else None

    def of_organization(self, org_key: str) -> list[VariableSet]:
        """Every set of an organization, by name."""
        return [from_item(item) for item in self._table.query(_index(org_key), index="gsi1")]

    def create(self, vs: VariableSet, more: list[WriteOp]) -> bool:
        """The set and its name claim, with `more` (its variables' writes: `variable_ops`), in one transaction;
        False when the name is taken (or a variable's write is refused)."""
        claim = {"pk": _names(vs.organization), "sk": vs.name, "varset_id": vs.id}
        try:
            self._table.transact([Put(claim, if_absent=True), Put(to_item(vs), if_absent=True), *more])
        except ConditionFailed:
            return False
        return True

    def replace(self, changed: VariableSet, current: VariableSet) -> None:
        """Store `changed` if the set is still `current` (a new name claimed, the old one released); a name taken
        is `Invalid`, any other change since `current` was read is ConditionFailed (to read again)."""
        ops: list[WriteOp] = [Put(to_item(changed), if_version=current.version)]
        names = _names(current.organization)
        if changed.name != current.name:
            ops += [Put({"pk": names, "sk": changed.name, "varset_id": changed.id}, if_absent=True),
                    Delete(names, current.name)]  # fmt: skip
        try:
            self._table.transact(ops)
        except ConditionFailed:
            if changed.name != current.name and self._table.get(names, changed.name):
                raise name_taken(changed.name) from None
            raise

    def delete(self, vs: VariableSet) -> None:
        """The set, its variables and their key claims, then its name."""
        doomed = [(i["pk"], i["sk"]) for i in self._table.query(_vars(vs.id), index="gsi1")]
        doomed += [(i["pk"], i["sk"]) for i in self._table.query(_key_claims(vs.id))]
        if doomed:
            self._table.batch_delete(doomed)
        self._table.transact([Delete(vs.id, SORT_KEY), Delete(_names(vs.organization), vs.name)])

    def delete_all_of(self, *, organization: str) -> None:
        for vs in self.of_organization(organization):
            self.delete(vs)

    # their variables ----------------------------------------------------------------------
    def variables(self, varset_id: str) -> list[dict[str, Any]]:
        """The records of a set's variables by category and key, sensitive ones as ciphertext."""
        return self._table.query(_vars(varset_id), index="gsi1")

    def find_variable(self, var_id: str) -> dict[str, Any] | None:
        return self._table.get(var_id, VARIABLE_SORT_KEY) if looks_like(var_id, "var") else None

    @staticmethod
    def variable_ops(record: dict[str, Any]) -> list[WriteOp]:
        """The writes of a new variable and its key claim (refused when the set has the key already)."""
        return [Put(_variable_claim(record), if_absent=True), Put(_variable_item(record), if_absent=True)]

    def create_variable(self, record: dict[str, Any]) -> bool:
        try:
            self._table.transact(self.variable_ops(record))
        except ConditionFailed:
            return False
        return True

    def update_variable(self, record: dict[str, Any], previous: dict[str, Any], expected_version: int) -> bool:
        """The changed variable (its claim moved when its category or key changed); False when refused.
        `previous`: the record as read."""
        ops: list[WriteOp] = [Put(_variable_item(record), if_version=expected_version)]
        if _slot(record) != _slot(previous):
            released = Delete(_key_claims(record["varset_id"]), _slot(previous))
            ops += [Put(_variable_claim(record), if_absent=True), released]
        try:
            self._table.transact(ops)
        except ConditionFailed:
            return False
        return True

    def variable_key_taken(self, record: dict[str, Any]) -> bool:
        """Whether another variable of the set claims `record`'s category and key."""
        return self._table.get(_key_claims(record["varset_id"]), _slot(record)) is not None

    def delete_variable(self, record: dict[str, Any]) -> None:
        claim = (_key_claims(record["varset_id"]), _slot(record))
        self._table.transact([Delete(record["id"], VARIABLE_SORT_KEY), Delete(*claim)])
