"""Single sign-on group mapping: at each sign-in through the operator's OpenID Connect issuer, a person
joins every team whose `sso-team-id` is one of their groups (and the team's organization), and leaves the
teams it put them in before whose group they no longer have. Teams without an sso-team-id are untouched."""

from __future__ import annotations

from terrace.domain.errors import Conflict, NotFound
from terrace.services.access.accounts import AccountService
from terrace.services.access.memberships import MembershipService
from terrace.services.access.store_sign_in import SignInStore
from terrace.services.access.teams import TeamService


class SsoTeamSync:
    def __init__(
        self, store: SignInStore, accounts: AccountService, teams: TeamService, memberships: MembershipService
    ):
        self._store = store
        self._accounts = accounts
        self._teams = teams
        self._memberships = memberships

    def sync(self, user_id: str, groups: list[str]) -> list[str]:
        """Put the user in the teams their groups name; returns those teams' ids (remembered for next time)."""
        before = self._store.sso_team_ids(user_id)
        user = self._accounts.get_user(user_id)
        now: set[str] = set()
        for group in dict.fromkeys(groups):
            for team in self._teams.sso_teams(group):
                now.add(team.id)
                if user_id not in team.users:
                    self._memberships.ensure(team.organization, user)
                    self._teams.write_members(team, set(team.users) | {user_id})
        for team_id in before - now:
            try:
                team = self._teams.load(team_id)
                if user_id in team.users and team.sso_team_id:
                    self._teams.write_members(team, set(team.users) - {user_id})
            except (Conflict, NotFound):
                continue  # the last owner stays an owner; a team deleted since has nothing to leave
        self._store.set_sso_team_ids(user_id, sorted(now))
        return sorted(now)
