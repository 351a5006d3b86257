"""Teams: CRUD, members, organization access. The owners team can be neither deleted nor emptied."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from typing import Any

from terrace.domain import limits
from terrace.domain.errors import Conflict, Forbidden, Invalid, NotFound
from terrace.domain.ids import looks_like
from terrace.domain.organizations import Organization
from terrace.domain.principal import Principal
from terrace.domain.teams import NAME_RE, OWNERS, VISIBILITIES, ScimLink, Team
from terrace.services.access import grants
from terrace.services.access.authz import Action, Authorizer, team_action
from terrace.services.access.organizations import OrganizationService
from terrace.services.access.permissions import ORG_ACCESS_KEYS
from terrace.services.access.store_teams import TeamStore


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
        store: TeamStore,
        authz: Authorizer,
        organizations: OrganizationService,
        *,
        after_delete: Sequence[TeamDeleted],
    ) -> None:
        self._store = store
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
        team = self._store.team(team_id) if looks_like(team_id, "team") else None
        if team is None:
            raise NotFound(f"team {team_id} not found")
        return team

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
        teams = self._store.teams_of(org.key)
        return [t for t in teams if (not names or t.name in names) and self._visible(principal, org, t)]

    def _visible(self, principal: Principal, org: Organization, team: Team) -> bool:
        """A `secret` team is seen by its members and by those who manage teams or membership."""
        if team.visibility == "organization" or principal.subject_id in team.users or principal.subject_id == team.id:
            return True
        return any(self._authz.can(principal, a, org.view) for a in (Action.MANAGE_TEAMS, Action.MANAGE_MEMBERSHIP))

    def of_user(self, organization: str, user_id: str) -> builtins.list[Team]:
        return [t for t in self._store.teams_of(organization) if user_id in t.users]

    def by_sso_id(self, organization: str) -> dict[str, Team]:
        return {t.sso_team_id: t for t in self._store.teams_of(organization) if t.sso_team_id}

    # changes -----------------------------------------------------------------------------
    def create(self, principal: Principal, organization: str, attrs: dict[str, Any]) -> Team:
        org = self.organization(principal, organization, Action.MANAGE_TEAMS)
        name = attrs.get("name")
        if not isinstance(name, str) or not NAME_RE.match(name):
            raise Invalid("name is required: letters, digits, space, . _ - (max 128)", pointer="/data/attributes/name")
        if name.lower() == OWNERS:
            raise Conflict("the owners team exists already")
        fields = self._fields(attrs)
        self._authz.require_granting(principal, org.view, {}, fields.get("org_access", {}))
        return self._store.create_team(org.key, name, fields, f"team {name} already exists in {org.name}")

    def update(self, principal: Principal, team_id: str, attrs: dict[str, Any]) -> Team:
        team = self.get(principal, team_id, Action.MANAGE_TEAMS)
        name = attrs.get("name", team.name)
        if name != team.name:
            if team.owners:
                raise Invalid("the owners team cannot be renamed", pointer="/data/attributes/name")
            if not isinstance(name, str) or not NAME_RE.match(name):
                raise Invalid("name: letters, digits, space, . _ - (max 128)", pointer="/data/attributes/name")
        fields = self._fields(attrs)
        if team.owners and "org_access" in fields:
            fields.pop("org_access")  # owners may do everything, always

        def check_granting(current: dict[str, bool]) -> None:  # a partial organization-access changes its keys
            org = self._orgs.by_key(team.organization)
            self._authz.require_granting(principal, org.view, current, fields["org_access"])

        updated = self._store.update_team(team, name, fields, check_granting)
        grants.forget()
        return updated

    def delete(self, principal: Principal, team_id: str) -> None:
        team = self.get(principal, team_id, Action.MANAGE_TEAMS)
        if team.owners:
            raise Forbidden("the owners team cannot be deleted")
        self._store.delete_team(team)
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
        return self._store.sso_teams(group)

    def write_members(self, team: Team, users: set[str]) -> Team:
        """Store a team's members without a permission check (single sign-on's group mapping)."""
        owners = self._accepted(team.organization, users) if team.owners else set()
        if team.owners and not owners:
            raise Conflict("the owners team cannot be emptied: an organization needs an owner")
        updated = self._store.write_members(team, users, owners if team.owners else None)
        if team.owners:  # an invited member owns once accepted
            self._orgs.forget(team.organization)
        grants.forget()
        return updated

    def write_scim(self, team: Team, link: ScimLink | None) -> Team:
        """Link the team to a SCIM group or unlink it (the site admin's SCIM group mappings, which check first);
        ConditionFailed when the team changed since it was read."""
        if team.owners and link is not None:
            raise Invalid("Owners team SCIM linking is not yet supported", pointer="/data/attributes/scim-group-id")
        return self._store.write_scim(team, link)

    def _accepted(self, organization: str, users: set[str]) -> set[str]:
        """The users whose membership of the organization is not a pending invitation."""
        found = self._store.memberships([(organization, user) for user in sorted(users)])
        return users - {m.user_id for m in found if m.status == "invited"}

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
