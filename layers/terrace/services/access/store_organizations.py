"""Storage of organizations (part of the access store, `store.py`; keys in `store_keys.py`), and of what every
organization starts with: its owners team, its creator's membership, the Default Project and the marker that its
stage usage is kept (`domain/stage_usage.py`), written in the organization's own transaction (or on first use, for
organizations created before teams: `ensure_defaults`).

An organization `org#<key>`/`org` is listed under gsi1 `orgs` by name; its name is claimed, lower-cased, by
`orgname#<name>`/`orgname` pointing at the key (older claims are the name as typed). A name released by a rename
stays claimed by the organization (`released_at`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from terrace.adapters.table import ConditionFailed, Delete, Put, Table, WriteOp
from terrace.domain import clock, stage_usage
from terrace.domain.errors import Conflict, NotFound
from terrace.domain.organizations import NAME_RE, Organization
from terrace.domain.projects import DEFAULT_PROJECT, default_project_id
from terrace.domain.teams import OWNERS, owners_team_id
from terrace.services import shared_keys
from terrace.services.access import store_keys as keys
from terrace.services.access.permissions import ORG_ACCESS_KEYS
from terrace.services.access.store_projects import project_items
from terrace.services.access.store_teams import grant_keys_of, membership_items, team_items


def org_from_item(item: dict[str, Any]) -> Organization:
    return Organization(
        id=item["id"],
        key=item.get("key", item["pk"].removeprefix("org#")),
        name=item["name"],
        email=item.get("email", ""),
        created_at=item["created_at"],
        owners=tuple(item.get("owners", [])),
        default_execution_mode=item.get("default_execution_mode", "remote"),
        settings=dict(item.get("settings", {})),
    )


def owners_team_items(organization: str, users: list[str]) -> list[dict[str, Any]]:
    everything = dict.fromkeys(ORG_ACCESS_KEYS, True)
    return team_items(
        organization, owners_team_id(organization), OWNERS, users=users, owners=True, org_access=everything
    )


@dataclass
class OrgRecord:
    """An organization as read for a change: written back over the version read, its stored item kept whole."""

    org: Organization
    _item: dict[str, Any] = field(repr=False)


class OrganizationStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    # reads -------------------------------------------------------------------------------
    def record(self, name: str) -> OrgRecord:
        """The organization named `name` (NotFound: none is, or it was renamed away)."""
        if not NAME_RE.match(name or ""):
            raise NotFound(f"organization {name} not found")
        claim = self._table.get(*keys.org_name_claim(name)) or self._table.get(*keys.org_exact_claim(name))
        item = self._table.get(*keys.org_key(claim["key"] if claim else name))
        if item is None or item["name"] != name:  # no claim: stored before claims existed, or renamed away
            raise NotFound(f"organization {name} not found")
        return OrgRecord(org_from_item(item), item)

    def by_key(self, key: str) -> Organization | None:
        item = self._table.get(*keys.org_key(key))
        return org_from_item(item) if item else None

    def all(self) -> list[Organization]:
        """Every organization, by name."""
        return [org_from_item(item) for item in self._table.query(keys.ORGS_INDEX, index="gsi1")]

    # changes -----------------------------------------------------------------------------
    def set_settings(self, record: OrgRecord, values: dict[str, Any]) -> Organization:
        item = record._item
        item.setdefault("settings", {}).update(values)
        version = item["version"]
        item["version"] = version + 1
        try:
            self._table.put(item, if_version=version)
        except ConditionFailed as exc:
            raise Conflict("organization changed concurrently; retry") from exc
        return org_from_item(item)

    def create(self, org: Organization) -> Organization:
        """The organization with its name claim and what it starts with; Conflict when the name is taken. Its key
        is its name, or its id when the name is some renamed organization's key (`org.key` is not read)."""
        name = org.name
        key = name if self._table.get(*keys.org_key(name)) is None else org.id
        pk, sk = keys.org_key(key)
        item = {"pk": pk, "sk": sk, "id": org.id, "key": key, "name": name, "email": org.email,
                "created_at": org.created_at, "owners": list(org.owners),
                "default_execution_mode": org.default_execution_mode, "settings": org.settings,
                "gsi1pk": keys.ORGS_INDEX, "gsi1sk": name, "version": 1}  # fmt: skip
        claim = {"pk": keys.org_name_claim(name)[0], "sk": keys.org_name_claim(name)[1], "key": key}
        seeded = [
            *owners_team_items(key, list(org.owners)),
            *membership_items(key, org.owners[0], ""),
            *project_items(key, default_project_id(key), DEFAULT_PROJECT),
            shared_keys.stage_usage_marker(key, stage_usage.KNOWN),  # its stage-usage markers are kept from now on
        ]
        try:
            self._table.transact(
                [Put(claim, if_absent=True), Put(item, if_absent=True), *(Put(i, if_absent=True) for i in seeded)]
            )
        except ConditionFailed as exc:
            raise Conflict(f"organization {name} already exists") from exc
        return org_from_item(item)

    def refuse_taken(self, name: str, own_key: str | None) -> None:
        """A name another organization holds in any case is taken. Its claim says so for names claimed since
        names are unique whatever their case; older organizations are found by name (creations are rare)."""
        claim = self._table.get(*keys.org_name_claim(name))
        taken = claim is not None and claim["key"] != own_key
        if taken and claim is not None and claim.get("released_at"):
            raise Conflict(
                f"organization name {name} was another organization's and stays reserved (tokens signed for "
                "it name it)",
                meta={"pointer": "/data/attributes/name"},
            )
        if not taken:
            lowered = name.lower()
            taken = any(o.name.lower() == lowered and o.key != own_key for o in self.all())
        if not taken:
            legacy = self._table.get(*keys.org_key(name))  # stored before name claims existed
            taken = legacy is not None and legacy["name"] == name and org_from_item(legacy).key != own_key
        if taken:
            raise Conflict(f"organization {name} already exists", meta={"pointer": "/data/attributes/name"})

    def update(self, record: OrgRecord, new_name: str, changes: dict[str, Any], enforced: bool | None) -> Organization:
        """Write the `changes` (any of email, default_execution_mode, settings) and the name (its claim moves, the
        old one stays this organization's) over the version read, with the assessment schedule's entry of the whole
        organization when `enforced` is not None."""
        item, before = record._item, record.org
        item.update(changes)
        version = item["version"]
        item["version"] = version + 1
        item["name"] = item["gsi1sk"] = new_name
        ops: list[WriteOp] = [Put(item, if_version=version)]
        if enforced is not None:
            pk, sk = shared_keys.organization_schedule_key(before.key)
            ops += [Put({"pk": pk, "sk": sk, "organization": before.key})] if enforced else [Delete(pk, sk)]
        old_name = before.name
        if new_name != old_name:
            claim = {"pk": keys.org_name_claim(new_name)[0], "sk": keys.org_name_claim(new_name)[1], "key": before.key}
            self.refuse_taken(new_name, before.key)
            # its own claim already: only the case changes, or it takes back a name it released
            held = self._table.get(*keys.org_name_claim(new_name))
            own = keys.org_name_claim(new_name) == keys.org_name_claim(old_name) or (
                held is not None and held["key"] == before.key
            )
            ops += [Put(claim) if own else Put(claim, if_absent=True)]
            if keys.org_name_claim(new_name) != keys.org_name_claim(old_name):
                # the old name stays this organization's: workload identity tokens signed under it carry it in
                # their `sub`, which a later organization of that name must never receive
                ops += [Put({**claim, "pk": keys.org_name_claim(old_name)[0], "released_at": clock.now_iso()})]
            if keys.org_exact_claim(old_name) != keys.org_name_claim(old_name):
                ops += [Delete(*keys.org_exact_claim(old_name))]
        try:
            self._table.transact(ops)
        except ConditionFailed as exc:
            raise Conflict(f"organization {new_name} already exists, or {old_name} changed meanwhile; retry") from exc
        return org_from_item(item)

    def add_owner(self, record: OrgRecord, user_id: str) -> Organization:
        """The user made an owner of the organization and a member of its owners team (`ensure_defaults` first)."""
        item, key = record._item, record.org.key
        item["owners"].append(user_id)
        version = item["version"]
        item["version"] = version + 1
        team = self._table.get(*keys.team_key(owners_team_id(key)))
        assert team is not None, "ensure_defaults() first"
        team["users"] = sorted(set(team["users"]) | {user_id})
        team_version = team["version"]
        team["version"] = team_version + 1
        self._table.transact([Put(item, if_version=version), Put(team, if_version=team_version)])
        return org_from_item(item)

    def ensure_defaults(self, organization: str, owners: list[str]) -> None:
        """Give an organization created before teams existed its owners team, memberships and Default Project."""
        if self._table.get(*keys.team_key(owners_team_id(organization))) is None:
            self._put_all(owners_team_items(organization, list(owners)))
        if self._table.get(*keys.project_key(default_project_id(organization))) is None:
            self._put_all(project_items(organization, default_project_id(organization), DEFAULT_PROJECT))
        for user_id in owners:
            if self._table.get(*keys.membership_key(organization, user_id)) is None:
                self._put_all(membership_items(organization, user_id, ""))

    def _put_all(self, items: list[dict[str, Any]]) -> None:
        try:
            self._table.transact([Put(item, if_absent=True) for item in items])
        except ConditionFailed:
            pass  # someone else did it first

    def delete(self, org: Organization) -> None:
        """The organization item and its name claims, then its teams, memberships, projects and grants."""
        exact, claim = keys.org_exact_claim(org.name), keys.org_name_claim(org.name)
        legacy = [Delete(*exact)] if exact != claim else []
        self._table.transact([Delete(*keys.org_key(org.key)), Delete(*claim), *legacy])
        self._remove_contents(org.key)

    def _remove_contents(self, organization: str) -> None:
        doomed: list[tuple[str, str]] = []
        for team in self._table.query(keys.teams_index(organization), index="gsi1"):
            doomed += [keys.team_key(team["id"]), keys.team_name_key(organization, team["name"])]
            doomed += [keys.sso_team_key(team["sso_team_id"], team["id"])] if team.get("sso_team_id") else []
        for project in self._table.query(keys.projects_index(organization), index="gsi1"):
            doomed += [keys.project_key(project["id"]), keys.project_name_key(organization, project["name"])]
        for member in self._table.query(keys.membership_key(organization, "")[0]):
            doomed += [(member["pk"], member["sk"]), keys.membership_pointer_key(member["id"])]
        for index, target in ((keys.team_workspaces_index, "workspace_id"), (keys.team_projects_index, "project_id")):
            doomed += grant_keys_of(self._table.query(index(organization), index="gsi1"), target)
        self._table.batch_delete(doomed + shared_keys.stage_usage_keys(organization))
