"""Storage of SCIM provisioning (`services/admin/scim_users.py`, `scim_groups.py`): the identity provider's users
and groups as it sent them, each a plain dict with its optimistic `version`.

- a user: partition `scim#users`, sort key its SCIM id; `user_id` names the Terrace user it provisioned. Its
  userName is claimed (`scim#user-names` / lower-cased name) and its Terrace user points back to it
  (`scim#by-user` / user id).
- a group: partition `scim#groups`, sort key its SCIM id; `members` (SCIM user ids) and `team_ids` (the teams
  mapped to it). Its displayName is claimed (`scim#group-names` / lower-cased name).

The only module that knows these keys. SCIM records belong to the installation, not to an organization."""

from __future__ import annotations

import builtins
from typing import Any

from terrace.adapters.table import ConditionFailed, Delete, Put, Table, WriteOp
from terrace.domain.errors import Conflict

USERS, USER_NAMES, BY_USER = "scim#users", "scim#user-names", "scim#by-user"
GROUPS, GROUP_NAMES = "scim#groups", "scim#group-names"
KEYS = ("pk", "sk")
KINDS = {"user": (USERS, USER_NAMES, "user_name"), "group": (GROUPS, GROUP_NAMES, "display_name")}


def _record(item: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if item is None else {k: v for k, v in item.items() if k not in KEYS}


class ScimStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    def get(self, kind: str, scim_id: str) -> dict[str, Any] | None:
        return _record(self._table.get(KINDS[kind][0], scim_id))

    def list(self, kind: str) -> builtins.list[dict[str, Any]]:
        """Every record of `kind` (user or group), oldest first."""
        found = [_record(item) or {} for item in self._table.query(KINDS[kind][0])]
        return sorted(found, key=lambda r: (r["created_at"], r["id"]))

    def by_name(self, kind: str, name: str) -> dict[str, Any] | None:
        claim = self._table.get(KINDS[kind][1], name.lower())
        return self.get(kind, claim["id"]) if claim else None

    def scim_id_of_user(self, user_id: str) -> str | None:
        item = self._table.get(BY_USER, user_id)
        return str(item["id"]) if item else None

    def create(self, kind: str, record: dict[str, Any]) -> None:
        """A new record with its name claim (and a user's pointer); Conflict when the name is taken."""
        partition, claims, name_key = KINDS[kind]
        ops: builtins.list[WriteOp] = [
            Put({"pk": claims, "sk": record[name_key].lower(), "id": record["id"]}, if_absent=True),
            Put({"pk": partition, "sk": record["id"], **record, "version": 1}, if_absent=True),
        ]
        if kind == "user":
            ops.append(Put({"pk": BY_USER, "sk": record["user_id"], "id": record["id"]}))
        try:
            self._table.transact(ops)
        except ConditionFailed as exc:
            raise Conflict(f"{name_key} {record[name_key]!r} is taken") from exc

    def replace(self, kind: str, record: dict[str, Any], old_name: str) -> dict[str, Any]:
        """Write `record` over the version it carries (a new name moves its claim); ConditionFailed when it changed
        meanwhile, Conflict when the new name is taken."""
        partition, claims, name_key = KINDS[kind]
        version = int(record["version"])
        written = {**record, "version": version + 1}
        ops: builtins.list[WriteOp] = [Put({"pk": partition, "sk": record["id"], **written}, if_version=version)]
        if record[name_key].lower() != old_name.lower():
            claim = {"pk": claims, "sk": record[name_key].lower(), "id": record["id"]}
            ops += [Delete(claims, old_name.lower()), Put(claim, if_absent=True)]
            if self._table.get(claims, record[name_key].lower()) is not None:
                raise Conflict(f"{name_key} {record[name_key]!r} is taken")
        self._table.transact(ops)
        return written

    def delete(self, kind: str, record: dict[str, Any]) -> None:
        partition, claims, name_key = KINDS[kind]
        ops: builtins.list[WriteOp] = [
            Delete(partition, record["id"], if_version=int(record["version"])),
            Delete(claims, record[name_key].lower()),
        ]
        if kind == "user":
            ops.append(Delete(BY_USER, record["user_id"]))
        self._table.transact(ops)
