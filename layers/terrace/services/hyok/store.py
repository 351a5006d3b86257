"""Storage of the HYOK area: OIDC configurations (`<prefix>oidc-…`, sort key `oidc`, listed by organization through
gsi1 `<org>#oidcs`), HYOK configurations (`hyokc-…`, `hyokc`, gsi1 `<org>#hyokcs`), customer key versions (`keyv-…`,
`keyv`, gsi1 `<hyokc>#keyvs`) and encrypted data keys (`dek-…`, `dek`, gsi1 `<keyv>#deks`). Every listing is oldest
first. The only module of `services/hyok/` that knows the table; the entities and rules are `domain/hyok.py`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, fields
from typing import Any

from terrace.adapters.table import ConditionFailed, Delete, Put, Table, WriteOp
from terrace.domain.hyok import BY_PREFIX, EncryptedDataKey, HyokConfiguration, KeyVersion, OidcConfiguration
from terrace.domain.ids import kind_of, looks_like

OIDC, HYOK, KEY_VERSION, DATA_KEY = "oidc", "hyokc", "keyv", "dek"
_FIELDS = {OIDC: OidcConfiguration, HYOK: HyokConfiguration, KEY_VERSION: KeyVersion, DATA_KEY: EncryptedDataKey}


def _listed_under(entity: Any) -> str:
    if isinstance(entity, OidcConfiguration):
        return f"{entity.organization}#oidcs"
    if isinstance(entity, HyokConfiguration):
        return f"{entity.organization}#hyokcs"
    if isinstance(entity, KeyVersion):
        return f"{entity.hyok_configuration_id}#keyvs"
    return f"{entity.key_version_id}#deks"


def _sort_key(entity: Any) -> str:
    for sk, cls in _FIELDS.items():
        if isinstance(entity, cls):
            return sk
    raise TypeError(type(entity).__name__)


def to_item(entity: Any) -> dict[str, Any]:
    values = asdict(entity)
    entity_id = values.pop("id")
    return {"pk": entity_id, "sk": _sort_key(entity), "gsi1pk": _listed_under(entity),
            "gsi1sk": f"{entity.created_at}#{entity_id}", **values}  # fmt: skip


def from_item(item: Mapping[str, Any]) -> Any:
    cls = _FIELDS[item["sk"]]
    names = {f.name for f in fields(cls)}
    values = {k: v for k, v in item.items() if k in names}
    if "version" in values:
        values["version"] = int(values["version"])
    if "workspaces_secured" in values:
        values["workspaces_secured"] = int(values["workspaces_secured"])
    return cls(id=item["pk"], **values)


def _oidc_id(identifier: str) -> bool:
    return kind_of(identifier) in BY_PREFIX and looks_like(identifier, kind_of(identifier))


class HyokStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    def _find(self, identifier: str, sk: str, valid: bool) -> Any:
        item = self._table.get(identifier, sk) if valid else None
        return from_item(item) if item else None

    def oidc(self, oidc_id: str) -> OidcConfiguration | None:
        found: OidcConfiguration | None = self._find(oidc_id, OIDC, _oidc_id(oidc_id))
        return found

    def hyok(self, hyok_id: str) -> HyokConfiguration | None:
        found: HyokConfiguration | None = self._find(hyok_id, HYOK, looks_like(hyok_id, "hyokc"))
        return found

    def key_version(self, key_version_id: str) -> KeyVersion | None:
        found: KeyVersion | None = self._find(key_version_id, KEY_VERSION, looks_like(key_version_id, "keyv"))
        return found

    def data_key(self, data_key_id: str) -> EncryptedDataKey | None:
        found: EncryptedDataKey | None = self._find(data_key_id, DATA_KEY, looks_like(data_key_id, "dek"))
        return found

    def oidcs_of(self, organization: str) -> list[OidcConfiguration]:
        return [from_item(i) for i in self._table.query(f"{organization}#oidcs", index="gsi1")]

    def hyoks_of(self, organization: str) -> list[HyokConfiguration]:
        return [from_item(i) for i in self._table.query(f"{organization}#hyokcs", index="gsi1")]

    def key_versions_of(self, hyok_id: str) -> list[KeyVersion]:
        return [from_item(i) for i in self._table.query(f"{hyok_id}#keyvs", index="gsi1")]

    def data_keys_of(self, key_version_id: str) -> list[EncryptedDataKey]:
        return [from_item(i) for i in self._table.query(f"{key_version_id}#deks", index="gsi1")]

    @staticmethod
    def create_op(entity: Any) -> WriteOp:
        """The transaction item writing a new `entity`, for another area's transaction (an encrypted data key with
        the state version it encrypts)."""
        return Put(to_item(entity), if_absent=True)

    @staticmethod
    def delete_data_key_op(data_key_id: str) -> WriteOp:
        """The transaction item removing an encrypted data key (one a newer write replaces)."""
        return Delete(data_key_id, DATA_KEY)

    def create(self, entity: Any, staged: WriteOp | None = None) -> None:
        """Write a new `entity` (with `staged`, an outbox entry, in the same transaction)."""
        self._write(Put(to_item(entity), if_absent=True), staged)

    def replace(self, entity: Any, staged: WriteOp | None = None) -> None:
        """Write `entity` over the version read (with `staged`, an outbox entry, in the same transaction);
        `ConditionFailed` when it changed since (callers read again through `services/optimistic.py`)."""
        expected = entity.version
        entity.version = expected + 1
        try:
            self._write(Put(to_item(entity), if_version=expected), staged)
        except ConditionFailed:
            entity.version = expected
            raise

    def _write(self, put: Put, staged: WriteOp | None) -> None:
        if staged is None:
            self._table.put(put.item, if_absent=put.if_absent, if_version=put.if_version)
        else:
            self._table.transact([put, staged])

    def delete(self, entity: Any) -> None:
        self._table.delete(entity.id, _sort_key(entity))

    def delete_all_of(self, organization: str) -> None:
        """Every OIDC and HYOK configuration of an organization with their key versions and data keys (no check:
        the organization's deletion checked)."""
        keys: list[tuple[str, str]] = []
        for hyok in self.hyoks_of(organization):
            for key in self.key_versions_of(hyok.id):
                keys += [(d.id, DATA_KEY) for d in self.data_keys_of(key.id)] + [(key.id, KEY_VERSION)]
            keys.append((hyok.id, HYOK))
        keys += [(o.id, OIDC) for o in self.oidcs_of(organization)]
        if keys:
            self._table.batch_delete(keys)
