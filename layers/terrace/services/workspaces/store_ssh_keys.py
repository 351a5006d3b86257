"""Storage of an organization's SSH keys (`sshkey-…` / `sshkey`, listed under gsi1 `org#<org key>#ssh-keys` by
`created#id`): the private key only as its ciphertext, the organization by its key and by its id (a later
organization of the same name never gets the key)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from terrace.adapters.table import ConditionFailed, Table
from terrace.domain.ids import looks_like
from terrace.domain.ssh_keys import SSHKey

SORT_KEY = "sshkey"


def _index(org_key: str) -> str:
    return f"org#{org_key}#ssh-keys"


@dataclass(frozen=True)
class StoredSSHKey:
    id: str
    organization: str  # the organization's key: a rename changes nothing here
    organization_id: str | None
    name: str
    created_at: str
    ciphertext: str
    version: int

    @property
    def public(self) -> SSHKey:
        return SSHKey(id=self.id, organization=self.organization, name=self.name, created_at=self.created_at)


def _from_item(item: dict[str, Any]) -> StoredSSHKey:
    return StoredSSHKey(item["pk"], item["organization"], item.get("organization_id"), item["name"],
                        item["created_at"], item["ciphertext"], int(item["version"]))  # fmt: skip


def _to_item(key: StoredSSHKey) -> dict[str, Any]:
    item: dict[str, Any] = {
        "pk": key.id,
        "sk": SORT_KEY,
        "organization": key.organization,
        "name": key.name,
        "created_at": key.created_at,
        "ciphertext": key.ciphertext,
        "version": key.version,
        "gsi1pk": _index(key.organization),
        "gsi1sk": f"{key.created_at}#{key.id}",
    }
    if key.organization_id is not None:
        item["organization_id"] = key.organization_id
    return item


class SSHKeyStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    def find(self, key_id: str | None) -> StoredSSHKey | None:
        item = self._table.get(key_id, SORT_KEY) if key_id and looks_like(key_id, "sshkey") else None
        return _from_item(item) if item else None

    def of_organization(self, org_key: str) -> list[StoredSSHKey]:
        """Oldest first."""
        return [_from_item(item) for item in self._table.query(_index(org_key), index="gsi1")]

    def create(self, key: StoredSSHKey) -> None:
        self._table.put(_to_item(key), if_absent=True)

    def replace(self, key: StoredSSHKey, expected_version: int) -> bool:
        """False when the key changed since `expected_version`."""
        try:
            self._table.put(_to_item(key), if_version=expected_version)
        except ConditionFailed:
            return False
        return True

    def delete(self, key_id: str) -> None:
        self._table.delete(key_id, SORT_KEY)

    def delete_all_of(self, *, organization: str) -> None:
        items = self._table.query(_index(organization), index="gsi1")
        if items:
            self._table.batch_delete([(item["pk"], item["sk"]) for item in items])
