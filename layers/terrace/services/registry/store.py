"""Storage of the private module registry: modules (`mod-…`, listed under `org#<org>#registry-modules`, each claimed
under its address in `org#<org>#regmodnames`), their versions (under `<module>#versions`, by version text), a
module's no-code designation (`<module>`/`nocode`, with a pointer `<nocode id>`/`nocode` to it) and
what a version keeps in the blob store (its tarball, and what the UI shows of it under `DOCS_PREFIX`). Providers and
GPG keys are `store_providers.py`.

The services see a module as a record (its attributes, its id under `id`, without its keys, which only this module
writes) and a version as the domain's `ModuleVersion`; a version being landed travels as its item, which only this
module reads (`version_of`) and writes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from terrace.adapters.blobs import BlobStore
from terrace.adapters.table import ConditionFailed, Delete, Put, Table
from terrace.domain.errors import NotFound
from terrace.domain.registry_modules import PRIVATE, ModuleVersion, version_key

# a version's (deprecation, revocation), decided from it as stored
Lifecycle = Callable[[ModuleVersion], tuple[dict[str, str] | None, dict[str, str] | None]]

Record = dict[str, Any]
MODULE = "regmod"
NO_CODE = "nocode"  # a module's no-code designation (on the module's id) and its pointer (on its own id)
KEYS = ("pk", "sk", "gsi1pk", "gsi1sk")
DOCS_PREFIX = "module-docs/"


def _index(org_key: str) -> str:
    return f"org#{org_key}#registry-modules"


def _claims(org_key: str) -> str:
    return f"org#{org_key}#regmodnames"


def create_claimed(table: Table, record: Record, sort_key: str, index: str, claims: str, claim_field: str) -> bool:
    """A module or provider (`record`, its id under `id`) and the claim on its address in one transaction: False,
    nothing written, when the address is taken (`claim_field` names the id on the claim)."""
    entity_id, address = record["id"], record["address"]
    attributes = {k: v for k, v in record.items() if k != "id"}
    item = {"pk": entity_id, "sk": sort_key, **attributes, "gsi1pk": index, "gsi1sk": f"{address}#{entity_id}"}
    claim = {"pk": claims, "sk": address, claim_field: entity_id, "organization_id": record["organization_id"]}
    try:
        table.transact([Put(claim, if_absent=True), Put(item, if_absent=True)])
    except ConditionFailed:
        return False
    return True


def _versions(module_id: str) -> str:
    return f"{module_id}#versions"


def module_address(registry: str, namespace: str, name: str, provider: str) -> str:
    """The claim's sort key: a private module's namespace is its organization, whatever its name is now."""
    if registry == PRIVATE:
        return f"private/{name.lower()}/{provider}"
    return f"public/{namespace.lower()}/{name.lower()}/{provider}"


def docs_key(version: ModuleVersion) -> str:
    """Where what the UI shows of a version is kept (outside the upload prefix: writing it notifies nothing)."""
    return f"{DOCS_PREFIX}{version.module_id}/{version.id}.json"


def _record(item: dict[str, Any]) -> Record:
    return {"id": item["pk"], **{k: v for k, v in item.items() if k not in KEYS}}


def version_of(item: dict[str, Any]) -> ModuleVersion:
    return ModuleVersion(
        id=item["id"],
        module_id=item["module_id"],
        version=item["sk"],
        status=item["status"],
        created_at=item["created_at"],
        updated_at=item["updated_at"],
        error=item.get("error"),
        blob_key=item["blob_key"],
        size=item.get("size"),
        md5=item.get("md5"),
        deprecation=item.get("deprecation"),
        revocation=item.get("revocation"),
        source=item.get("source", "tfe-api"),
        commit_sha=item.get("commit_sha"),
    )


class ModuleStore:
    def __init__(self, table: Table, blobs: BlobStore) -> None:
        self._table, self._blobs = table, blobs

    # modules -----------------------------------------------------------------------------------
    def module(self, module_id: str) -> Record | None:
        item = self._table.get(module_id, MODULE)
        return None if item is None else _record(item)

    def modules_of(self, org_key: str) -> list[Record]:
        return [_record(i) for i in self._table.query(_index(org_key), index="gsi1")]

    def claimed(self, org_key: str, address: str) -> Record | None:
        """The module claimed at `address` in the organization (the claim, then the module)."""
        claim = self._table.get(_claims(org_key), address)
        return self.module(claim["module_id"]) if claim else None

    def create(self, record: Record) -> bool:
        """The module and its address's claim at once; False (nothing written) when the address is taken."""
        org_key = record["organization"]
        return create_claimed(self._table, record, MODULE, _index(org_key), _claims(org_key), "module_id")

    def delete(self, module_id: str) -> None:
        """A module with its versions and their blobs first (a deletion cut short is finished again), then its claim
        and its item."""
        item = self._table.get(module_id, MODULE)
        if item is not None:
            self._delete_item(item)

    def _delete_item(self, item: dict[str, Any]) -> None:
        for version in self.versions_of(item["pk"]):
            self.delete_version(version)
        no_code = self.no_code_of(item["pk"])
        if no_code is not None:
            self.delete_no_code(no_code)
        self._table.transact([Delete(_claims(item["organization"]), item["address"]), Delete(item["pk"], MODULE)])

    def delete_all_of(self, *, organization: str) -> None:
        """Every module of an organization with its versions and their blobs (`workflows/purge.py`; not checked:
        the organization's deletion was)."""
        for item in self._table.query(_index(organization), index="gsi1"):
            self._delete_item(item)

    # the no-code designation: on the module's partition, found by its id through a pointer ----------------
    def no_code_of(self, module_id: str) -> Record | None:
        item = self._table.get(module_id, NO_CODE)
        return None if item is None else {k: v for k, v in item.items() if k not in KEYS}

    def no_code(self, no_code_id: str) -> Record | None:
        pointer = self._table.get(no_code_id, NO_CODE)
        found = self.no_code_of(pointer["module_id"]) if pointer else None
        return found if found is not None and found["id"] == no_code_id else None

    def create_no_code(self, record: Record) -> bool:
        """The designation (row version 1) and its pointer at once; False (nothing written) when the module has one."""
        item = {"pk": record["module_id"], "sk": NO_CODE, **record, "version": 1}
        pointer = {"pk": record["id"], "sk": NO_CODE, "module_id": record["module_id"]}
        try:
            self._table.transact([Put(item, if_absent=True), Put(pointer, if_absent=True)])
        except ConditionFailed:
            return False
        return True

    def replace_no_code(self, record: Record, version: int) -> None:
        """`record` over the row version it was read at (ConditionFailed: changed since)."""
        self._table.put(
            {"pk": record["module_id"], "sk": NO_CODE, **record, "version": version + 1}, if_version=version
        )

    def delete_no_code(self, record: Record) -> None:
        self._table.transact([Delete(record["module_id"], NO_CODE), Delete(record["id"], NO_CODE)])

    # versions ----------------------------------------------------------------------------------
    def versions_of(self, module_id: str) -> list[ModuleVersion]:
        """A module's versions, newest first (semantic version order)."""
        found = [version_of(item) for item in self._table.query(_versions(module_id))]
        return sorted(found, key=lambda v: version_key(v.version), reverse=True)

    def version(self, module_id: str, version: str) -> ModuleVersion | None:
        item = self._table.get(_versions(module_id), version)
        return None if item is None else version_of(item)

    def create_version(self, version: ModuleVersion) -> bool:
        """A new version (row version 1); False (nothing written) when the module has that version already."""
        item = {
            "pk": _versions(version.module_id),
            "sk": version.version,
            "id": version.id,
            "module_id": version.module_id,
            "status": version.status,
            "created_at": version.created_at,
            "updated_at": version.updated_at,
            "blob_key": version.blob_key,
            "version": 1,
        }
        if version.source != "tfe-api":
            item.update(source=version.source, commit_sha=version.commit_sha)
        try:
            self._table.put(item, if_absent=True)
        except ConditionFailed:
            return False
        return True

    def uploaded_to(self, module_id: str, blob_key: str) -> dict[str, Any] | None:
        """The item of the module's version whose tarball is `blob_key` (to land it: `version_of`, `land`)."""
        return next((i for i in self._table.query(_versions(module_id)) if i["blob_key"] == blob_key), None)

    def land(self, item: dict[str, Any], changes: dict[str, Any]) -> ModuleVersion | None:
        """The version `item` with `changes` (status, error or size and MD5, updated_at; a None removes the
        attribute), written over the row version it was read at; None when another landing of the same upload
        decided first."""
        updated = {k: v for k, v in {**item, **changes}.items() if v is not None}  # a None change removes it
        updated["version"] = item["version"] + 1
        try:
            self._table.put(updated, if_version=item["version"])
        except ConditionFailed:
            return None
        return version_of(updated)

    def set_lifecycle(self, version: ModuleVersion, change: Lifecycle, now: str) -> ModuleVersion:
        """The version's deprecation and revocation as `change` decides them from the stored version (it may refuse:
        Invalid), written over the row version it read (ConditionFailed: changed since)."""
        item = self._table.get(_versions(version.module_id), version.version)
        if item is None:
            raise NotFound(f"version {version.version} not found")
        deprecation, revocation = change(version_of(item))
        updated = {k: v for k, v in item.items() if k not in ("deprecation", "revocation")}
        updated.update({k: v for k, v in (("deprecation", deprecation), ("revocation", revocation)) if v is not None})
        updated.update(updated_at=now, version=item["version"] + 1)
        self._table.put(updated, if_version=item["version"])
        return version_of(updated)

    def delete_version(self, version: ModuleVersion) -> None:
        self._table.delete(_versions(version.module_id), version.version)
        self._blobs.delete(version.blob_key)
        self._blobs.delete(docs_key(version))
