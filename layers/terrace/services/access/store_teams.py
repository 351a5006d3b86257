"""Storage of teams and organization memberships (part of the access store, `store.py`; keys in `store_keys.py`).

A team `team-…`/`team` is listed under gsi1 `org#<key>#teams` by lower-cased name, its name claimed under
`org#<key>#teamnames`, and found by its sso-team-id under `ssoteam#<id>`. A membership is `org#<key>#members`/
`<user>` (all of an organization's are one query) with a pointer from its id `ou-…`/`om`."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from terrace.adapters.table import ConditionFailed, Delete, Put, Table, WriteOp
from terrace.domain import clock, limits
from terrace.domain.errors import Conflict, TooManyRequests
from terrace.domain.ids import new_id
from terrace.domain.memberships import Membership
from terrace.domain.teams import ScimLink, Team
from terrace.services.access import store_keys as keys
from terrace.services.access.permissions import ORG_ACCESS_KEYS


def team_from_item(item: dict[str, Any]) -> Team:
    return Team(
        id=item["id"],
        name=item["name"],
        organization=item["organization"],
        org_access={key: bool(item.get("org_access", {}).get(key, False)) for key in ORG_ACCESS_KEYS},
        visibility=item.get("visibility", "secret"),
        sso_team_id=item.get("sso_team_id", ""),
        users=tuple(item.get("users", [])),
        owners=bool(item.get("owners")),
        allow_member_token_management=bool(item.get("allow_member_token_management", True)),
        version=int(item["version"]),
        scim=ScimLink(**item["scim"]) if item.get("scim") else None,
    )


def membership_from_item(item: dict[str, Any]) -> Membership:
    return Membership(item["id"], item["organization"], item["user_id"], item.get("email", ""),
                      item.get("status", "active"), item["created_at"], bool(item.get("hidden")))  # fmt: skip


def membership_items(
    organization: str, user_id: str, email: str, status: str = "active", hidden: bool = False
) -> list[dict[str, Any]]:
    membership_id = new_id("ou")
    pk, sk = keys.membership_key(organization, user_id)
    ppk, psk = keys.membership_pointer_key(membership_id)
    member = {"pk": pk, "sk": sk, "id": membership_id, "organization": organization, "user_id": user_id,
              "email": email, "status": status, "created_at": clock.now_iso(), "version": 1}  # fmt: skip
    if hidden:
        member["hidden"] = True
    return [member, {"pk": ppk, "sk": psk, "organization": organization, "user_id": user_id}]


def team_items(organization: str, team_id: str, name: str, **fields: Any) -> list[dict[str, Any]]:
    """The team and its name claim; `fields` are the team's attributes (users, owners, org_access, visibility,
    sso_team_id, allow_member_token_management)."""
    pk, sk = keys.team_key(team_id)
    npk, nsk = keys.team_name_key(organization, name)
    team = {"pk": pk, "sk": sk, "id": team_id, "organization": organization, "name": name, "users": [],
            "org_access": {}, "visibility": "secret", "created_at": clock.now_iso(),
            "gsi1pk": keys.teams_index(organization), "gsi1sk": name.lower(), "version": 1}  # fmt: skip
    team.update(fields)
    return [team, {"pk": npk, "sk": nsk, "team_id": team_id}]


def sso_items(team: dict[str, Any]) -> list[dict[str, Any]]:
    if not team.get("sso_team_id"):
        return []
    pk, sk = keys.sso_team_key(team["sso_team_id"], team["id"])
    return [{"pk": pk, "sk": sk, "organization": team["organization"]}]


def grant_keys_of(grants: list[dict[str, Any]], target: str) -> list[tuple[str, str]]:
    """The keys of grant items and of their claims (`target`: the item's workspace_id or project_id)."""
    return [k for g in grants for k in ((g["pk"], g["sk"]), keys.grant_claim_key(g[target], g["team_id"]))]


class TeamStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    # teams -------------------------------------------------------------------------------
    def team(self, team_id: str) -> Team | None:
        item = self._table.get(*keys.team_key(team_id))
        return team_from_item(item) if item else None

    def teams_of(self, organization: str) -> list[Team]:
        """The organization's teams, by lower-cased name."""
        return [team_from_item(i) for i in self._table.query(keys.teams_index(organization), index="gsi1")]

    def sso_teams(self, group: str) -> list[Team]:
        """The teams, in any organization, whose sso-team-id is `group`."""
        pointers = self._table.query(keys.sso_team_key(group, "")[0])
        return [team_from_item(i) for i in self._table.batch_get([keys.team_key(p["sk"]) for p in pointers])]

    def create_team(self, organization: str, name: str, fields: dict[str, Any], taken: str) -> Team:
        items = team_items(organization, new_id("team"), name, **fields)
        items += sso_items(items[0])
        try:
            self._table.transact([Put(item, if_absent=True) for item in items])
        except ConditionFailed as exc:
            raise Conflict(taken) from exc
        return team_from_item(items[0])

    def update_team(
        self, team: Team, name: str, fields: dict[str, Any], check_granting: Callable[[dict[str, bool]], None]
    ) -> Team:
        """Write the team's new name and attributes over the version read. A partial `org_access` changes the keys
        it names: `check_granting` is given the stored organization access first (it refuses what the caller may
        not grant)."""
        item = self._table.get(*keys.team_key(team.id))
        assert item is not None
        ops: list[WriteOp] = []
        if name != team.name:
            npk, nsk = keys.team_name_key(team.organization, name)
            ops += [Put({"pk": npk, "sk": nsk, "team_id": team.id}, if_absent=True),
                    Delete(*keys.team_name_key(team.organization, team.name))]  # fmt: skip
            item.update(name=name, gsi1sk=name.lower())
        if "org_access" in fields:
            check_granting({key: bool(value) for key, value in item.get("org_access", {}).items()})
            fields["org_access"] = {**item.get("org_access", {}), **fields["org_access"]}
        if "sso_team_id" in fields and fields["sso_team_id"] != team.sso_team_id:
            ops += [Delete(*keys.sso_team_key(team.sso_team_id, team.id))] if team.sso_team_id else []
            ops += [Put(i) for i in sso_items({**item, **fields})]
        item.update(fields)
        item["version"] = team.version + 1
        try:
            self._table.transact([Put(item, if_version=team.version), *ops])
        except ConditionFailed as exc:
            raise Conflict(f"team {name} already exists, or the team changed; retry") from exc
        return team_from_item(item)

    def delete_team(self, team: Team) -> None:
        """The team, its name claim, its sso pointer and its grants."""
        doomed = [keys.team_key(team.id), keys.team_name_key(team.organization, team.name)]
        doomed += [keys.sso_team_key(team.sso_team_id, team.id)] if team.sso_team_id else []
        for index, target in ((keys.team_workspaces_index, "workspace_id"), (keys.team_projects_index, "project_id")):
            grants = [g for g in self._table.query(index(team.organization), index="gsi1") if g["team_id"] == team.id]
            doomed += grant_keys_of(grants, target)
        self._table.batch_delete(doomed)

    def write_members(self, team: Team, users: set[str], owners: set[str] | None) -> Team:
        """Store a team's members over the version read; for the owners team also the organization's owners
        (`owners`), in the same transaction."""
        item = self._table.get(*keys.team_key(team.id))
        assert item is not None
        item["users"] = sorted(users)
        item["version"] = team.version + 1
        ops: list[WriteOp] = [Put(item, if_version=team.version)]
        if owners is not None:
            org = self._table.get(*keys.org_key(team.organization))
            assert org is not None
            version = org["version"]
            org.update(owners=sorted(owners), version=version + 1)
            ops.append(Put(org, if_version=version))
        try:
            self._table.transact(ops)
        except ConditionFailed as exc:
            raise Conflict("the team changed concurrently; retry") from exc
        return team_from_item(item)

    def write_scim(self, team: Team, link: ScimLink | None) -> Team:
        """Store the team's SCIM group link (None: unlinked) over the version read (ConditionFailed: changed)."""
        item = self._table.get(*keys.team_key(team.id))
        assert item is not None
        item["scim"] = dataclasses.asdict(link) if link is not None else None
        item["version"] = team.version + 1
        self._table.put(item, if_version=team.version)
        return team_from_item(item)

    # memberships -------------------------------------------------------------------------
    def membership(self, organization: str, user_id: str) -> Membership | None:
        item = self._table.get(*keys.membership_key(organization, user_id))
        return membership_from_item(item) if item else None

    def membership_pointer(self, membership_id: str) -> tuple[str, str] | None:
        """The organization key and user id of a membership, by its id."""
        pointer = self._table.get(*keys.membership_pointer_key(membership_id))
        return (pointer["organization"], pointer["user_id"]) if pointer else None

    def memberships_of(self, organization: str) -> list[Membership]:
        """Every membership and invitation of the organization (hidden ones too)."""
        return [membership_from_item(i) for i in self._table.query(keys.membership_key(organization, "")[0])]

    def memberships(self, pairs: list[tuple[str, str]]) -> list[Membership]:
        """The memberships that exist of these (organization key, user id) pairs."""
        wanted = [keys.membership_key(org, user) for org, user in pairs]
        return [membership_from_item(item) for item in self._table.batch_get(wanted)] if wanted else []

    def add_membership(
        self, organization: str, user_id: str, email: str, status: str, hidden: bool = False
    ) -> Membership | None:
        """A new membership; None when the user has one already (made meanwhile)."""
        items = membership_items(organization, user_id, email, status, hidden)
        try:
            self._table.transact([Put(item, if_absent=True) for item in items])
        except ConditionFailed:
            return None
        return membership_from_item(items[0])

    def accept(self, member: Membership, email: str) -> Membership:
        """The membership made active and visible (with `email` unless it has one), over the version read."""
        item = self._table.get(*keys.membership_key(member.organization, member.user_id))
        assert item is not None
        version = int(item.get("version", 1))
        item.update(status="active", hidden=False, email=item.get("email") or email, version=version + 1)
        try:
            self._table.put(item, if_version=version)
        except ConditionFailed as exc:
            raise Conflict("the membership changed concurrently; retry") from exc
        return membership_from_item(item)

    def delete_membership(self, member: Membership) -> None:
        self._table.transact([Delete(*keys.membership_key(member.organization, member.user_id)),
                              Delete(*keys.membership_pointer_key(member.id))])  # fmt: skip

    def count_invitation(self, user_id: str, day: str) -> None:
        """Count one more invitation by the user on `day` (TooManyRequests past `limits.INVITATIONS_PER_DAY`);
        ConditionFailed when another was counted meanwhile (count again)."""
        pk, sk = keys.invitations_key(user_id)
        item = self._table.get(pk, sk)
        count = int(item["count"]) if item is not None and item.get("day") == day else 0
        if count >= limits.INVITATIONS_PER_DAY:
            raise TooManyRequests(f"at most {limits.INVITATIONS_PER_DAY} invitations a day; try again tomorrow")
        version = int(item["version"]) if item is not None else 0
        updated = {"pk": pk, "sk": sk, "day": day, "count": count + 1, "version": version + 1,
                   "expires_at": int(clock.epoch()) + 2 * 86400}  # fmt: skip
        if item is None:
            self._table.put(updated, if_absent=True)
        else:
            self._table.put(updated, if_version=version)
