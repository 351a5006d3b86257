"""Storage of policy as code: policies (`pol-…`, listed under `org#<org>#policies`, their names claimed under
`org#<org>#policynames`), policy sets (`polset-…`, `org#<org>#policy-sets`, names under `org#<org>#polsetnames`),
their parameters (`var-…`, listed under `<set>#params`) and their versions (`polsetver-…`, `<set>#versions`, each
with its tarball and, once read, its bundle in the blob store). The runs' evaluations are `store_evaluations.py`.

The services see records: an item's attributes with its id under `id` and without its keys, which only this module
writes (`_record`, `_item`): an item read, changed and written back is the same item with the same keys.
"""

from __future__ import annotations

from typing import Any

from terrace.adapters.blobs import BlobStore
from terrace.adapters.table import ConditionFailed, Put, Table
from terrace.domain import stage_usage
from terrace.domain.errors import Conflict, Invalid
from terrace.domain.policies import PolicySet, TagSelector
from terrace.services import shared_keys

Record = dict[str, Any]
POLICY, POLICY_SET, PARAMETER, VERSION = "policy", "polset", "psparam", "psv"
KEYS = ("pk", "sk", "gsi1pk", "gsi1sk")


def _policies(org_key: str) -> str:
    return f"org#{org_key}#policies"


def _policy_names(org_key: str) -> str:
    return f"org#{org_key}#policynames"


def _sets(org_key: str) -> str:
    return f"org#{org_key}#policy-sets"


def _set_names(org_key: str) -> str:
    return f"org#{org_key}#polsetnames"


def _params(set_id: str) -> str:
    return f"{set_id}#params"


def _versions(set_id: str) -> str:
    return f"{set_id}#versions"


def _record(item: dict[str, Any]) -> Record:
    """An item's attributes and its id (its partition key)."""
    return {"id": item["pk"], **{k: v for k, v in item.items() if k not in KEYS}}


def _item(record: Record, sk: str, gsi1pk: str, gsi1sk: str) -> dict[str, Any]:
    attributes = {k: v for k, v in record.items() if k != "id"}
    return {"pk": record["id"], "sk": sk, **attributes, "gsi1pk": gsi1pk, "gsi1sk": gsi1sk}


def _policy_item(record: Record) -> dict[str, Any]:
    return _item(record, POLICY, _policies(record["organization"]), f"{record['name']}#{record['id']}")


def _set_item(record: Record) -> dict[str, Any]:
    return _item(record, POLICY_SET, _sets(record["organization"]), f"{record['created_at']}#{record['id']}")


def _param_item(record: Record) -> dict[str, Any]:
    return _item(record, PARAMETER, _params(record["policy_set_id"]), f"{record['key']}#{record['id']}")


def _version_item(record: Record) -> dict[str, Any]:
    return _item(record, VERSION, _versions(record["policy_set_id"]), f"{record['created_at']}#{record['id']}")


def policy_set_from_record(item: Record, organization_name: str) -> PolicySet:
    """The policy set a record holds (its organization by the name it has now)."""
    return PolicySet(
        id=item["id"],
        organization=organization_name,
        name=item["name"],
        description=item.get("description", ""),
        kind=item["kind"],
        global_=bool(item.get("global")),
        overridable=bool(item.get("overridable")),
        agent_enabled=bool(item.get("agent_enabled")),
        policy_tool_version=item.get("policy_tool_version", ""),
        policies_path=item.get("policies_path", ""),
        policy_update_pattern=tuple(item.get("policy_update_pattern", [])),
        policy_ids=tuple(item.get("policy_ids", [])),
        workspace_ids=tuple(item.get("workspace_ids", [])),
        project_ids=tuple(item.get("project_ids", [])),
        exclusion_ids=tuple(item.get("exclusion_ids", [])),
        project_exclusion_ids=tuple(item.get("project_exclusion_ids", [])),
        current_version_id=item.get("current_version_id"),
        newest_version_id=item.get("newest_version_id"),
        created_at=item["created_at"],
        updated_at=item["updated_at"],
        tag_selectors=tuple(TagSelector(s["key"], s.get("value"), s["exclude"]) for s in item.get("tag_selectors", [])),
        vcs_repo=item.get("vcs_repo"),
    )


def stored_selectors(selectors: list[TagSelector]) -> list[dict[str, Any]]:
    """A policy set's tag selectors as its record holds them."""
    return [{"key": s.key, "value": s.value, "exclude": s.exclude} for s in selectors]


class PolicyStore:
    def __init__(self, table: Table, blobs: BlobStore) -> None:
        self._table, self._blobs = table, blobs

    def _get(self, pk: str, sk: str) -> Record | None:
        item = self._table.get(pk, sk)
        return None if item is None else _record(item)

    # policies ----------------------------------------------------------------------------------
    def policy(self, policy_id: str) -> Record | None:
        return self._get(policy_id, POLICY)

    def policies_of(self, org_key: str) -> list[Record]:
        return [_record(i) for i in self._table.query(_policies(org_key), index="gsi1")]

    def create_policy(self, record: Record) -> None:
        """The policy and its name's claim at once (Invalid when the name is taken)."""
        claim = {"pk": _policy_names(record["organization"]), "sk": record["name"].lower(), "policy_id": record["id"]}
        try:
            self._table.transact([Put(_policy_item(record), if_absent=True), Put(claim, if_absent=True)])
        except ConditionFailed as exc:
            raise Invalid(f"name {record['name']} has already been taken", pointer="/data/attributes/name") from exc

    def replace_policy(self, record: Record, expected_version: int) -> None:
        try:
            self._table.put(_policy_item(record), if_version=expected_version)
        except ConditionFailed as exc:
            raise Conflict(f"policy {record['id']} changed concurrently; retry") from exc

    def delete_policy(self, record: Record) -> None:
        self._table.delete(_policy_names(record["organization"]), record["name"].lower())
        self._table.delete(record["id"], POLICY)

    # policy sets -------------------------------------------------------------------------------
    def policy_set(self, set_id: str) -> Record | None:
        return self._get(set_id, POLICY_SET)

    def policy_sets_of(self, org_key: str) -> list[Record]:
        return [_record(i) for i in self._table.query(_sets(org_key), index="gsi1")]

    def create_policy_set(self, record: Record) -> None:
        """The set, its name's claim and the organization's policy sets marker at once (its runs' stages ask the
        policy sets); Invalid when the name is taken."""
        org_key, name = record["organization"], record["name"]
        claim = {"pk": _set_names(org_key), "sk": name.lower(), "policy_set_id": record["id"]}
        usage = shared_keys.stage_usage_marker(org_key, stage_usage.POLICY_SETS)
        try:
            self._table.transact([Put(_set_item(record), if_absent=True), Put(claim, if_absent=True), Put(usage)])
        except ConditionFailed as exc:
            raise Invalid(f"name {name} has already been taken", pointer="/data/attributes/name") from exc

    def rename_policy_set(self, org_key: str, set_id: str, old: str, new: str) -> None:
        """Claims the set's new name, then gives the old one up (Invalid when the new one is taken)."""
        claim = {"pk": _set_names(org_key), "sk": new.lower(), "policy_set_id": set_id}
        try:
            self._table.put(claim, if_absent=True)
        except ConditionFailed as exc:
            raise Invalid(f"name {new} has already been taken", pointer="/data/attributes/name") from exc
        self._table.delete(_set_names(org_key), old.lower())

    def replace_policy_set(self, record: Record, expected_version: int) -> None:
        """Raises ConditionFailed when the set changed since `expected_version` (callers re-read: `optimistic`)."""
        self._table.put(_set_item(record), if_version=expected_version)

    def delete_policy_set(self, record: Record) -> None:
        self._table.delete(_set_names(record["organization"]), record["name"].lower())
        self._table.delete(record["id"], POLICY_SET)

    # parameters --------------------------------------------------------------------------------
    def parameter(self, param_id: str) -> Record | None:
        return self._get(param_id, PARAMETER)

    def parameters_of(self, set_id: str) -> list[Record]:
        return [_record(i) for i in self._table.query(_params(set_id), index="gsi1")]

    def create_parameter(self, record: Record) -> None:
        self._table.put(_param_item(record), if_absent=True)

    def replace_parameter(self, record: Record, expected_version: int) -> None:
        try:
            self._table.put(_param_item(record), if_version=expected_version)
        except ConditionFailed as exc:
            raise Conflict(f"parameter {record['id']} changed concurrently; retry") from exc

    def delete_parameter(self, param_id: str) -> None:
        self._table.delete(param_id, PARAMETER)

    # versions ----------------------------------------------------------------------------------
    def version(self, version_id: str) -> Record | None:
        return self._get(version_id, VERSION)

    def create_version(self, record: Record) -> None:
        self._table.put(_version_item(record), if_absent=True)

    def save_version(self, record: Record) -> None:
        """Unconditional: a version's landing is decided once, by the pending version's one upload."""
        self._table.put(_version_item(record))

    # an organization's deletion ----------------------------------------------------------------
    def delete_all_of(self, *, organization: str) -> None:
        """Every policy, policy set, parameter and version (with their tarballs and bundles) of an organization, and
        the name claims (`workflows/purge.py`; not checked: the organization's deletion was)."""
        self._delete_all(self._table.query(_policies(organization), index="gsi1"))
        self._delete_all(self._table.query(_policy_names(organization)))
        for policy_set in self._table.query(_sets(organization), index="gsi1"):
            self._delete_all(self._table.query(_params(policy_set["pk"]), index="gsi1"))
            for version in self._table.query(_versions(policy_set["pk"]), index="gsi1"):
                for key in (version.get("blob_key"), version.get("bundle_key")):
                    if key:
                        self._blobs.delete(key)
                self._table.delete(version["pk"], version["sk"])
            self._table.delete(policy_set["pk"], policy_set["sk"])
        self._delete_all(self._table.query(_set_names(organization)))

    def _delete_all(self, items: list[dict[str, Any]]) -> None:
        if items:
            self._table.batch_delete([(item["pk"], item["sk"]) for item in items])
