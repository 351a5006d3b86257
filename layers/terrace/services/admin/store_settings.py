"""Storage of the installation's admin settings (`domain/admin_settings.py`): one item per section, partition
`admin#settings`, sort key the section name, holding its public values, its secrets sealed by the encryptor port
(`sealed`: attribute -> ciphertext, each under the context of its section and attribute) and the optimistic
`version`. The only module that knows these keys; nothing of an organization is here."""

from __future__ import annotations

from typing import Any

from terrace.adapters.table import Table

PARTITION = "admin#settings"


class AdminSettingsStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    def read(self, section: str) -> tuple[dict[str, Any], dict[str, str], int]:
        """(public values, sealed secrets, version); a section never written is ({}, {}, 0)."""
        item = self._table.get(PARTITION, section)
        if item is None:
            return {}, {}, 0
        return dict(item.get("values", {})), dict(item.get("sealed", {})), int(item["version"])

    def write(self, section: str, values: dict[str, Any], sealed: dict[str, str], version: int) -> None:
        """Over the version read (0: none yet); ConditionFailed when another writer won."""
        item = {"pk": PARTITION, "sk": section, "values": values, "sealed": sealed, "version": version + 1}
        if version == 0:
            self._table.put(item, if_absent=True)
        else:
            self._table.put(item, if_version=version)
