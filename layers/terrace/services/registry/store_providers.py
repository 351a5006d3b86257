"""Storage of the private provider registry: providers (`prov-…`, listed under `org#<org>#registry-providers`, each
claimed under its address in `org#<org>#regprovnames`), their versions (under `<provider>#versions`, by version
text), each version's platforms (under `<version id>#platforms`, by `<os>_<arch>`), the files all three name in the
blob store, and the GPG keys of an organization's namespace (under `org#<org>#gpg-keys`, by key ID).

The services see a provider as a record (its attributes, its id under `id`, without its keys, which only this module
writes), a version, a platform and a key as the domain's entities; a version or a platform being landed travels as
its item, which only this module reads (`provider_version_of`, `platform_of`, `recorded`) and writes.
"""

from __future__ import annotations

from typing import Any

from terrace.adapters.blobs import BlobStore
from terrace.adapters.table import ConditionFailed, Delete, Put, Table
from terrace.domain.errors import Conflict
from terrace.domain.registry_modules import version_key
from terrace.domain.registry_providers import PRIVATE, GPGKey, ProviderPlatform, ProviderVersion
from terrace.services.registry.store import create_claimed

Record = dict[str, Any]
PROVIDER = "regprov"
KEYS = ("pk", "sk", "gsi1pk", "gsi1sk")


def _index(org_key: str) -> str:
    return f"org#{org_key}#registry-providers"


def _claims(org_key: str) -> str:
    return f"org#{org_key}#regprovnames"


def _versions(provider_id: str) -> str:
    return f"{provider_id}#versions"


def _platforms(version_id: str) -> str:
    return f"{version_id}#platforms"


def _platform_key(os_name: str, arch: str) -> str:
    return f"{os_name}_{arch}"


def _keys(org_key: str) -> str:
    return f"org#{org_key}#gpg-keys"


def provider_address(registry: str, namespace: str, name: str) -> str:
    """The claim's sort key: a private provider's namespace is its organization, whatever its name is now."""
    if registry == PRIVATE:
        return f"private/{name.lower()}"
    return f"public/{namespace.lower()}/{name.lower()}"


def recorded(item: dict[str, Any], field: str) -> dict[str, Any] | None:
    """The size and MD5 recorded for a version's file (`shasums`, `signature`) when it landed; None before."""
    value = item.get(field)
    return value if isinstance(value, dict) else None


def provider_version_of(item: dict[str, Any]) -> ProviderVersion:
    return ProviderVersion(
        id=item["id"],
        provider_id=item["provider_id"],
        version=item["sk"],
        key_id=item["key_id"],
        protocols=tuple(item.get("protocols", ())),
        created_at=item["created_at"],
        updated_at=item["updated_at"],
        shasums_key=item["shasums_key"],
        signature_key=item["signature_key"],
        shasums_uploaded="shasums" in item,
        signature_uploaded="signature" in item,
    )


def platform_of(item: dict[str, Any]) -> ProviderPlatform:
    return ProviderPlatform(
        id=item["id"],
        version_id=item["version_id"],
        os=item["os"],
        arch=item["arch"],
        filename=item["filename"],
        shasum=item["shasum"],
        blob_key=item["blob_key"],
        created_at=item["created_at"],
        uploaded=isinstance(item.get("binary"), dict),
        error=item.get("error"),
    )


def _key_of(item: dict[str, Any], namespace: str) -> GPGKey:
    return GPGKey(
        id=item["id"],
        organization=item["organization"],
        namespace=namespace,
        key_id=item["sk"],
        ascii_armor=item["ascii_armor"],
        created_at=item["created_at"],
        updated_at=item["updated_at"],
    )


class ProviderStore:
    def __init__(self, table: Table, blobs: BlobStore) -> None:
        self._table, self._blobs = table, blobs

    def _put_new(self, item: dict[str, Any]) -> bool:
        try:
            self._table.put(item, if_absent=True)
        except ConditionFailed:
            return False
        return True

    def _put_over(self, item: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any] | None:
        updated = {**item, **changes, "version": item["version"] + 1}
        try:
            self._table.put(updated, if_version=item["version"])
        except ConditionFailed:
            return None
        return updated

    # providers ---------------------------------------------------------------------------------
    def provider(self, provider_id: str) -> Record | None:
        item = self._table.get(provider_id, PROVIDER)
        return None if item is None else {"id": item["pk"], **{k: v for k, v in item.items() if k not in KEYS}}

    def providers_of(self, org_key: str) -> list[Record]:
        items = self._table.query(_index(org_key), index="gsi1")
        return [{"id": i["pk"], **{k: v for k, v in i.items() if k not in KEYS}} for i in items]

    def claimed(self, org_key: str, address: str) -> Record | None:
        """The provider claimed at `address` in the organization (the claim, then the provider)."""
        claim = self._table.get(_claims(org_key), address)
        return self.provider(claim["provider_id"]) if claim else None

    def create(self, record: Record) -> bool:
        """The provider and its address's claim at once; False (nothing written) when the address is taken."""
        org_key = record["organization"]
        return create_claimed(self._table, record, PROVIDER, _index(org_key), _claims(org_key), "provider_id")

    def delete(self, provider_id: str) -> None:
        """A provider with its versions, their platforms and files first (a deletion cut short is finished again),
        then its claim and its item."""
        item = self._table.get(provider_id, PROVIDER)
        if item is not None:
            self._delete_item(item)

    def _delete_item(self, item: dict[str, Any]) -> None:
        for version in self.versions_of(item["pk"]):
            self.delete_version(version)
        self._table.transact([Delete(_claims(item["organization"]), item["address"]), Delete(item["pk"], PROVIDER)])

    # versions ----------------------------------------------------------------------------------
    def versions_of(self, provider_id: str) -> list[ProviderVersion]:
        """A provider's versions, newest first (semantic version order)."""
        found = [provider_version_of(item) for item in self._table.query(_versions(provider_id))]
        return sorted(found, key=lambda v: version_key(v.version), reverse=True)

    def version(self, provider_id: str, version: str) -> ProviderVersion | None:
        item = self._table.get(_versions(provider_id), version)
        return None if item is None else provider_version_of(item)

    def recorded_files(self, provider_id: str, version: str) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """What was recorded of a version's `SHA256SUMS` and `SHA256SUMS.sig` when they landed (size, MD5)."""
        item = self._table.get(_versions(provider_id), version) or {}
        return recorded(item, "shasums"), recorded(item, "signature")

    def create_version(self, version: ProviderVersion) -> bool:
        """A new version (row version 1); False (nothing written) when the provider has that version already."""
        return self._put_new({
            "pk": _versions(version.provider_id), "sk": version.version, "id": version.id,
            "provider_id": version.provider_id, "key_id": version.key_id, "protocols": list(version.protocols),
            "created_at": version.created_at, "updated_at": version.updated_at, "shasums_key": version.shasums_key,
            "signature_key": version.signature_key, "version": 1})  # fmt: skip

    def version_item(self, provider_id: str, version_id: str) -> dict[str, Any] | None:
        """The item of the provider's version `version_id` (to land one of its files: `recorded`, `land_version`)."""
        return next((i for i in self._table.query(_versions(provider_id)) if i["id"] == version_id), None)

    def land_version(self, item: dict[str, Any], changes: dict[str, Any]) -> ProviderVersion | None:
        """The version `item` with `changes` written over the row version it was read at; None when it changed."""
        updated = self._put_over(item, changes)
        return None if updated is None else provider_version_of(updated)

    def delete_version(self, version: ProviderVersion) -> None:
        """Its platforms and their zips first (a deletion cut short is finished again), its files, then its item."""
        for platform in self.platforms_of(version.id):
            self.delete_platform(platform)
        self._blobs.delete(version.shasums_key)
        self._blobs.delete(version.signature_key)
        self._table.delete(_versions(version.provider_id), version.version)

    # platforms ---------------------------------------------------------------------------------
    def platforms_of(self, version_id: str) -> list[ProviderPlatform]:
        return [platform_of(item) for item in self._table.query(_platforms(version_id))]

    def platform(self, version_id: str, os_name: str, arch: str) -> ProviderPlatform | None:
        item = self._table.get(_platforms(version_id), _platform_key(os_name, arch))
        return None if item is None else platform_of(item)

    def create_platform(self, platform: ProviderPlatform) -> bool:
        """A new platform (row version 1); False (nothing written) when the version has that os and arch already."""
        return self._put_new({
            "pk": _platforms(platform.version_id), "sk": _platform_key(platform.os, platform.arch), "id": platform.id,
            "version_id": platform.version_id, "os": platform.os, "arch": platform.arch, "filename": platform.filename,
            "shasum": platform.shasum, "blob_key": platform.blob_key, "created_at": platform.created_at,
            "version": 1})  # fmt: skip

    def recorded_binary(self, platform: ProviderPlatform) -> tuple[int | None, str | None]:
        item = self._table.get(_platforms(platform.version_id), _platform_key(platform.os, platform.arch)) or {}
        binary = item.get("binary") or {}
        return binary.get("size"), binary.get("md5")

    def platform_item(self, version_id: str, blob_key: str) -> dict[str, Any] | None:
        """The item of the version's platform whose zip is `blob_key` (to land it: `platform_of`, `land_platform`)."""
        return next((i for i in self._table.query(_platforms(version_id)) if i["blob_key"] == blob_key), None)

    def land_platform(self, item: dict[str, Any], changes: dict[str, Any]) -> ProviderPlatform | None:
        """The platform `item` with `changes` (its recorded `binary`, or why it was refused: `error`; the last
        landing's error goes) written over the row version it was read at; None when another landing decided first."""
        updated = self._put_over({k: v for k, v in item.items() if k != "error"}, changes)
        return None if updated is None else platform_of(updated)

    def delete_platform(self, platform: ProviderPlatform) -> None:
        self._blobs.delete(platform.blob_key)
        self._table.delete(_platforms(platform.version_id), _platform_key(platform.os, platform.arch))

    # GPG keys ----------------------------------------------------------------------------------
    def keys_of(self, org_key: str, namespace: str) -> list[GPGKey]:
        """The keys of the organization `org_key`, whose name (their namespace) is `namespace`."""
        return [_key_of(item, namespace) for item in self._table.query(_keys(org_key))]

    def key(self, org_key: str, key_id: str, namespace: str) -> GPGKey | None:
        item = self._table.get(_keys(org_key), key_id)
        return None if item is None else _key_of(item, namespace)

    def create_key(self, key: GPGKey) -> bool:
        """A new key (row version 1); False (nothing written) when the namespace has that key already."""
        return self._put_new({"pk": _keys(key.organization), "sk": key.key_id, "id": key.id,
                              "organization": key.organization, "ascii_armor": key.ascii_armor,
                              "created_at": key.created_at, "updated_at": key.updated_at, "version": 1})  # fmt: skip

    def move_key(self, key_id: str, source: str, target: tuple[str, str], now: str) -> GPGKey | None:
        """The key from the organization `source` to `target` (its key, its name) in one transaction; None when the
        source no longer has it, Conflict when the target has it already."""
        item = self._table.get(_keys(source), key_id)
        if item is None:
            return None
        moved = {**item, "pk": _keys(target[0]), "organization": target[0], "updated_at": now}
        try:
            self._table.transact([Delete(_keys(source), key_id), Put(moved, if_absent=True)])
        except ConditionFailed as exc:
            raise Conflict(f"the GPG key {key_id} is already in {target[1]}") from exc
        return _key_of(moved, target[1])

    def delete_key(self, org_key: str, key_id: str) -> None:
        self._table.delete(_keys(org_key), key_id)

    # an organization's deletion ----------------------------------------------------------------
    def delete_all_of(self, *, organization: str) -> None:
        """Every provider of an organization with its versions, platforms and files, then its namespace's GPG keys
        (`workflows/purge.py`; not checked: the organization's deletion was)."""
        for item in self._table.query(_index(organization), index="gsi1"):
            self._delete_item(item)
        for item in self._table.query(_keys(organization)):
            self._table.delete(item["pk"], item["sk"])
