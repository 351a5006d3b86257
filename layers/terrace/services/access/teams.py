"""Teams: CRUD, members, organization access. The owners team can be neither deleted nor emptied."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from typing import Any

from terrace.adapters.table import ConditionFailed, Delete, Put, Table, WriteOp
from terrace.domain import limits
from terrace.domain.errors import Conflict, Forbidden, Invalid, NotFound
from terrace.domain.ids import looks_like, new_id
from terrace.domain.organizations import Organization
from terrace.domain.principal import Principal
from terrace.domain.teams import NAME_RE, VISIBILITIES, Team
from terrace.services.access import access_keys as keys
from terrace.services.access import grants, org_defaults
from terrace.services.access.authz import Action, Authorizer, team_action
from terrace.services.access.organizations import OrganizationService
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
    )


def _org_access(value: Any) -> dict[str, bool]:
    if not isinstance(value, dict) or any(
        k not in ORG_ACCESS_KEYS or not isinstance(v, bool) for k, v in value.items()
    ):
        raise Invalid(
            f"organization-access takes true/false for {', '.join(ORG_ACCESS_KEYS)}",
            pointer="/data/attributes/organization-access",
        )
    return dict(value)


TeamDeleted = Callable[[Team], None]  # what another area keeps of a team, deleted with it


class TeamService:
    def __init__(
        self,
        table: Table,
        authz: Authorizer,
        organizations: OrganizationService,
        *,
        after_delete: Sequence[TeamDeleted],
    ) -> None:
        self._table = table
        self._authz = authz
        self._orgs = organizations
        # what other areas keep of a team goes with it (its notification configurations, its tokens)
        self.after_delete = tuple(after_delete)

    # reads -------------------------------------------------------------------------------
    def organization(self, principal: Principal, name: str, action: Action = Action.READ_TEAMS) -> Organization:
        org = self._orgs.get(principal, name, action)
        self._orgs.ensure_defaults(org)
        return org

    def organization_by_key(self, principal: Principal, key: str, action: Action = Action.READ_TEAMS) -> Organization:
        """As `organization`, for the key stored on a team, membership or project (never a name: a renamed
        organization's key may since have become another organization's name)."""
        org = self._orgs.get_by_key(principal, key, action)
        self._orgs.ensure_defaults(org)
        return org

    def load(self, team_id: str) -> Team:
        item = self._table.get(*keys.team_key(team_id)) if looks_like(team_id, "team") else None
        if item is None:
            raise NotFound(f"team {team_id} not found")
        return team_from_item(item)

    def get(self, principal: Principal, team_id: str, action: Action = Action.READ_TEAMS) -> Team:
        team = self.load(team_id)
        try:
            org = self._orgs.get_by_key(principal, team.organization, Action.READ_TEAMS)
        except NotFound as exc:
            raise NotFound(f"team {team_id} not found") from exc
        if not self._visible(principal, org, team):
            raise NotFound(f"team {team_id} not found")
        if action is not Action.READ_TEAMS:
            self._orgs.get_by_key(principal, team.organization, team_action(action, owners=team.owners))
        return team

    def list(self, principal: Principal, organization: str, names: list[str] | None = None) -> list[Team]:
        return self.list_of(principal, self.organization(principal, organization), names)

    def list_of(
        self, principal: Principal, org: Organization, names: builtins.list[str] | None = None
    ) -> builtins.list[Team]:
        """The teams of `org` the principal may see (`org` read with a permission check)."""
        teams = [team_from_item(i) for i in self._table.query(keys.teams_index(org.key), index="gsi1")]
        return [t for t in teams if (not names or t.name in names) and self._visible(principal, org, t)]

    def _visible(self, principal: Principal, org: Organization, team: Team) -> bool:
        """A `secret` team is seen by its members and by those who manage teams or membership."""
        if team.visibility == "organization" or principal.subject_id in team.users or principal.subject_id == team.id:
            return True
        return any(self._authz.can(principal, a, org.view) for a in (Action.MANAGE_TEAMS, Action.MANAGE_MEMBERSHIP))

    def of_user(self, organization: str, user_id: str) -> builtins.list[Team]:
        teams = [team_from_item(i) for i in self._table.query(keys.teams_index(organization), index="gsi1")]
        return [t for t in teams if user_id in t.users]

    def by_sso_id(self, organization: str) -> dict[str, Team]:
        teams = [team_from_item(i) for i in self._table.query(keys.teams_index(organization), index="gsi1")]
        return {t.sso_team_id: t for t in teams if t.sso_team_id}

    # changes -----------------------------------------------------------------------------
    def create(self, principal: Principal, organization: str, attrs: dict[str, Any]) -> Team:
        org = self.organization(principal, organization, Action.MANAGE_TEAMS)
        name = attrs.get("name")
        if not isinstance(name, str) or not NAME_RE.match(name):
            raise Invalid("name is required: letters, digits, space, . _ - (max 128)", pointer="/data/attributes/name")
        if name.lower() == org_defaults.OWNERS:
            raise Conflict("the owners team exists already")
        fields = self._fields(attrs)
        self._authz.require_granting(principal, org.view, {}, fields.get("org_access", {}))
        items = org_defaults.team_items(org.key, new_id("team"), name, **fields)
        items += _sso_items(items[0])
        try:
            self._table.transact([Put(item, if_absent=True) for item in items])
        except ConditionFailed as exc:
            raise Conflict(f"team {name} already exists in {org.name}") from exc
        return team_from_item(items[0])

    def update(self, principal: Principal, team_id: str, attrs: dict[str, Any]) -> Team:
        team = self.get(principal, team_id, Action.MANAGE_TEAMS)
        item = self._table.get(*keys.team_key(team.id))
        assert item is not None
        ops: list[WriteOp] = []
        name = attrs.get("name", team.name)
        if name != team.name:
            if team.owners:
                raise Invalid("the owners team cannot be renamed", pointer="/data/attributes/name")
            if not isinstance(name, str) or not NAME_RE.match(name):
                raise Invalid("name: letters, digits, space, . _ - (max 128)", pointer="/data/attributes/name")
            npk, nsk = keys.team_name_key(team.organization, name)
            ops += [Put({"pk": npk, "sk": nsk, "team_id": team.id}, if_absent=True),
                    Delete(*keys.team_name_key(team.organization, team.name))]  # fmt: skip
            item.update(name=name, gsi1sk=name.lower())
        fields = self._fields(attrs)
        if team.owners and "org_access" in fields:
            fields.pop("org_access")  # owners may do everything, always
        if "org_access" in fields:  # a partial organization-access changes the keys it names
            current = {key: bool(value) for key, value in item.get("org_access", {}).items()}
            org = self._orgs.by_key(team.organization)
            self._authz.require_granting(principal, org.view, current, fields["org_access"])
            fields["org_access"] = {**item.get("org_access", {}), **fields["org_access"]}
        if "sso_team_id" in fields and fields["sso_team_id"] != team.sso_team_id:
            ops += [Delete(*keys.sso_team_key(team.sso_team_id, team.id))] if team.sso_team_id else []
            ops += [Put(i) for i in _sso_items({**item, **fields})]
        item.update(fields)
        item["version"] = team.version + 1
        try:
            self._table.transact([Put(item, if_version=team.version), *ops])
        except ConditionFailed as exc:
            raise Conflict(f"team {name} already exists, or the team changed; retry") from exc
        grants.forget()
        return team_from_item(item)

    def delete(self, principal: Principal, team_id: str) -> None:
        team = self.get(principal, team_id, Action.MANAGE_TEAMS)
        if team.owners:
            raise Forbidden("the owners team cannot be deleted")
        doomed = [keys.team_key(team.id), keys.team_name_key(team.organization, team.name)]
        doomed += [keys.sso_team_key(team.sso_team_id, team.id)] if team.sso_team_id else []
        for index, key in ((keys.team_workspaces_index, "workspace_id"), (keys.team_projects_index, "project_id")):
            for g in self._table.query(index(team.organization), index="gsi1"):
                if g["team_id"] == team.id:
                    doomed += [(g["pk"], g["sk"]), keys.grant_claim_key(g[key], team.id)]
        self._table.batch_delete(doomed)
        grants.forget()
        for hook in self.after_delete:  # what other areas keep of a team (its notification configurations)
            hook(team)

    def set_members(self, principal: Principal, team: Team, users: set[str]) -> Team:
        """Replace a team's members (the callers check who they are); owners keep at least one."""
        if team.owners:
            self._orgs.get_by_key(principal, team.organization, team_action(Action.MANAGE_MEMBERSHIP, owners=True))
        return self.write_members(team, users)

    def sso_teams(self, group: str) -> builtins.list[Team]:
        """The teams, in any organization, whose sso-team-id is `group` (an identity provider's group)."""
        pointers = self._table.query(keys.sso_team_key(group, "")[0])
        return [team_from_item(i) for i in self._table.batch_get([keys.team_key(p["sk"]) for p in pointers])]

    def write_members(self, team: Team, users: set[str]) -> Team:
        """Store a team's members without a permission check (single sign-on's group mapping)."""
        owners = self._accepted(team.organization, users) if team.owners else set()
        if team.owners and not owners:
            raise Conflict("the owners team cannot be emptied: an organization needs an owner")
        item = self._table.get(*keys.team_key(team.id))
        assert item is not None
        item["users"] = sorted(users)
        item["version"] = team.version + 1
        ops: list[WriteOp] = [Put(item, if_version=team.version)]
        if team.owners:
            org = self._table.get(f"org#{team.organization}", "org")
            assert org is not None
            version = org["version"]
            org.update(owners=sorted(owners), version=version + 1)  # an invited member owns once accepted
            ops.append(Put(org, if_version=version))
        try:
            self._table.transact(ops)
        except ConditionFailed as exc:
            raise Conflict("the team changed concurrently; retry") from exc
        if team.owners:
            self._orgs.forget(team.organization)
        grants.forget()
        return team_from_item(item)

    def _accepted(self, organization: str, users: set[str]) -> set[str]:
        """The users whose membership of the organization is not a pending invitation."""
        wanted = [keys.membership_key(organization, user) for user in sorted(users)]
        invited = (
            {i["user_id"] for i in self._table.batch_get(wanted) if i.get("status") == "invited"} if wanted else set()
        )
        return users - invited

    @staticmethod
    def _fields(attrs: dict[str, Any]) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        if "organization-access" in attrs and attrs["organization-access"] is not None:
            fields["org_access"] = _org_access(attrs["organization-access"])
        if "visibility" in attrs:
            if attrs["visibility"] not in VISIBILITIES:
                raise Invalid("visibility must be secret or organization", pointer="/data/attributes/visibility")
            fields["visibility"] = attrs["visibility"]
        if "sso-team-id" in attrs:
            value = attrs["sso-team-id"] or ""
            fields["sso_team_id"] = limits.text(value, "sso-team-id", 256)
        if "allow-member-token-management" in attrs:
            if not isinstance(attrs["allow-member-token-management"], bool):
                raise Invalid("allow-member-token-management must be true or false",
                              pointer="/data/attributes/allow-member-token-management")  # fmt: skip
            fields["allow_member_token_management"] = attrs["allow-member-token-management"]
        return fields


def _sso_items(team: dict[str, Any]) -> builtins.list[dict[str, Any]]:
    if not team.get("sso_team_id"):
        return []
    pk, sk = keys.sso_team_key(team["sso_team_id"], team["id"])
    return [{"pk": pk, "sk": sk, "organization": team["organization"]}]
