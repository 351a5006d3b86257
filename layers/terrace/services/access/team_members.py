"""A team's members changed one at a time, by username or e-mail address (the UI's team page): who may change
them is the team service's rule (manage-membership; the owners team only by owners), who can be added the
membership service's (a member of the organization, as the API's `relationships/users` and
`relationships/organization-memberships` take them)."""

from __future__ import annotations

from terrace.domain.errors import Invalid, NotFound
from terrace.domain.principal import Principal
from terrace.domain.teams import Team
from terrace.services.access.authz import Action
from terrace.services.access.memberships import MembershipService
from terrace.services.access.teams import TeamService


class TeamMembers:
    def __init__(self, teams: TeamService, memberships: MembershipService) -> None:
        self._teams = teams
        self._memberships = memberships

    def add(self, principal: Principal, team_id: str, who: str) -> Team:
        """Add the organization's member named `who` (a username, or the e-mail address of their membership)."""
        team = self._teams.get(principal, team_id, Action.MANAGE_MEMBERSHIP)
        user_id = self._member(principal, team, who.strip())
        return self._teams.set_members(principal, team, set(team.users) | {user_id})

    def remove(self, principal: Principal, team_id: str, user_id: str) -> Team:
        team = self._teams.get(principal, team_id, Action.MANAGE_MEMBERSHIP)
        if user_id not in team.users:
            raise NotFound(f"user {user_id} is not a member of team {team.name}")
        return self._teams.set_members(principal, team, set(team.users) - {user_id})

    def _member(self, principal: Principal, team: Team, who: str) -> str:
        if not who:
            raise Invalid("type a member's username or e-mail address", pointer="/data/attributes/user")
        if "@" not in who:
            return self._memberships.visible_member(team.organization, who)
        org = self._teams.organization_by_key(principal, team.organization)
        found = self._memberships.list_of(org, emails=[who])
        if not found:
            raise NotFound(f"no member of {org.name} has the e-mail address {who}: invite them first")
        return found[0].user_id
