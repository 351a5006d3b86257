"""What the access area's API documents and the UI's team page show, each read in one call (the routes serialize
them; nothing here writes): a team (its members' memberships, whether the caller may manage teams, the users and
memberships a client asked to include), the team page (members, who can be added, what the caller may change), the
members page and organization memberships (their teams, the users and teams asked to include)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from terrace.domain.errors import NotFound
from terrace.domain.memberships import Membership
from terrace.domain.organizations import Organization
from terrace.domain.principal import Principal
from terrace.domain.teams import Team
from terrace.domain.users import User
from terrace.services.access.accounts import AccountService
from terrace.services.access.authz import Action, Authorizer
from terrace.services.access.memberships import MembershipService
from terrace.services.access.teams import TeamService


@dataclass(frozen=True)
class TeamDocument:
    team: Team
    organization: str  # its name
    membership_ids: list[str]  # of its members, in the team's order
    can_manage: bool


@dataclass(frozen=True)
class IncludedMembership:
    membership: Membership
    team_ids: list[str]


@dataclass(frozen=True)
class TeamDocuments:
    documents: list[TeamDocument]
    users: list[User] = field(default_factory=list)
    memberships: list[IncludedMembership] = field(default_factory=list)


@dataclass(frozen=True)
class TeamPage:
    """The UI's team page: the team, its members and the organization's other active members (who can be added),
    and what the caller may change."""

    team: Team
    organization: str  # its name
    members: list[User]
    candidates: list[User]
    can_manage_teams: bool
    can_manage_membership: bool


@dataclass(frozen=True)
class MembersPage:
    """The UI's members page: the organization's memberships (active and invited) with their users and team
    names, and whether the caller may invite and remove."""

    organization: str  # its name
    rows: list[tuple[Membership, User | None, list[str]]]
    can_manage: bool


@dataclass(frozen=True)
class MembershipDocuments:
    organization: str  # its name ("" when there are no memberships)
    memberships: list[IncludedMembership]
    users: list[User] = field(default_factory=list)
    teams: list[TeamDocument] = field(default_factory=list)


class AccessDocuments:
    def __init__(
        self, authz: Authorizer, teams: TeamService, memberships: MembershipService, accounts: AccountService
    ) -> None:
        self._authz = authz
        self._teams = teams
        self._memberships = memberships
        self._accounts = accounts

    def of_team(self, principal: Principal, team: Team, include: Collection[str] = ()) -> TeamDocuments:
        """`team` (a team the principal was allowed to read or change) as a document, with what `include` names."""
        org = self._teams.organization_by_key(principal, team.organization)
        memberships = self._memberships.list_of(org)
        users = self._accounts.get_users(list(team.users)) if "users" in include else []
        included: list[IncludedMembership] = []
        if "organization-memberships" in include:
            teams = self._teams.list_of(principal, org)
            included = [
                IncludedMembership(m, [t.id for t in teams if m.user_id in t.users])
                for m in memberships
                if m.user_id in team.users
            ]
        return TeamDocuments([self._document(principal, org, team, memberships)], users, included)

    def team_page(self, principal: Principal, organization: str, team_id: str) -> TeamPage:
        """The team `team_id` of the organization named `organization` (another organization's is not found)."""
        team = self._teams.get(principal, team_id)
        org = self._teams.organization_by_key(principal, team.organization)
        if org.name != organization:
            raise NotFound(f"team {team_id} not found")
        active = [m.user_id for m in self._memberships.list_of(org, status="active") if m.user_id not in team.users]
        users = {u.id: u for u in self._accounts.get_users(sorted({*team.users, *active}))}
        members = sorted((users[u] for u in team.users if u in users), key=lambda u: u.username)
        candidates = sorted((users[u] for u in active if u in users), key=lambda u: u.username)
        can = lambda action: self._authz.can(principal, action, org.view)  # noqa: E731
        return TeamPage(team, org.name, members, candidates, can(Action.MANAGE_TEAMS), can(Action.MANAGE_MEMBERSHIP))

    def members_page(self, principal: Principal, organization: str) -> MembersPage:
        """The memberships of `organization` (read with the caller's permission), invitations first."""
        org = self._teams.organization(principal, organization)
        members = sorted(self._memberships.list_of(org), key=lambda m: (m.status != "invited", m.email))
        users = {u.id: u for u in self._accounts.get_users([m.user_id for m in members])}
        teams = self._teams.list_of(principal, org)
        rows = [(m, users.get(m.user_id), [t.name for t in teams if m.user_id in t.users]) for m in members]
        return MembersPage(org.name, rows, self._authz.can(principal, Action.MANAGE_MEMBERSHIP, org.view))

    def of_organization(
        self, principal: Principal, organization: str, names: list[str] | None = None, query: str | None = None
    ) -> TeamDocuments:
        """The teams of `organization` the principal may see (`filter[names]`, `q` on the name)."""
        org = self._teams.organization(principal, organization)
        teams = self._teams.list_of(principal, org, names)
        if query:
            teams = [t for t in teams if query.lower() in t.name.lower()]
        memberships = self._memberships.list(principal, organization)
        return TeamDocuments([self._document(principal, org, t, memberships) for t in teams])

    def of_memberships(
        self, principal: Principal, members: list[Membership], include: Collection[str] = ()
    ) -> MembershipDocuments:
        """`members` (memberships of one organization the principal was allowed to read) with their teams, and the
        users (`user`) and teams (`teams`) a client asked to include."""
        if not members:
            return MembershipDocuments("", [])
        org = self._teams.organization_by_key(principal, members[0].organization)
        teams = self._teams.list_of(principal, org)
        documents = [IncludedMembership(m, [t.id for t in teams if m.user_id in t.users]) for m in members]
        users = self._accounts.get_users([m.user_id for m in members]) if "user" in include else []
        team_documents: list[TeamDocument] = []
        if "teams" in include:
            member_ids = {m.user_id for m in members}
            everyone = self._memberships.list_of(org)
            team_documents = [self._document(principal, org, t, everyone) for t in teams if member_ids & set(t.users)]
        return MembershipDocuments(org.name, documents, users, team_documents)

    def _document(
        self, principal: Principal, org: Organization, team: Team, memberships: list[Membership]
    ) -> TeamDocument:
        by_user = {m.user_id: m.id for m in memberships}
        can = self._authz.can(principal, Action.MANAGE_TEAMS, org.view)
        return TeamDocument(team, org.name, [by_user[u] for u in team.users if u in by_user], can)
