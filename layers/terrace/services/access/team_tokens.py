"""Team API tokens, as HCP Terraform has them: a team's described tokens (any number, each description unique in its
team, `POST /teams/:id/authentication-tokens`) beside its legacy token (at most one, without a description:
`POST /teams/:id/authentication-token` replaces it and touches no described one); read and revoked by the team
(legacy) or by the token's id (any), listed per team and per organization. Who may manage a team's tokens is
`Authorizer.require_team_tokens`'s. A token asked for without `expired-at` expires two years later
(`tokens.default_expiry`).
Revoked or expired tokens fail on the very next request: authentication reads the token's lookup item every time.
A team's tokens die with it (`TeamService.after_delete`) and with its organization (`AccessStore.delete_all_of`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from terrace.domain import clock, limits
from terrace.domain.errors import Forbidden, Invalid, NotFound
from terrace.domain.ids import new_id
from terrace.domain.organizations import Organization
from terrace.domain.principal import Principal, PrincipalKind
from terrace.domain.teams import Team
from terrace.domain.token_ttl_policies import capped_expiry
from terrace.domain.tokens import IssuedToken, Token, creator_of, default_expiry
from terrace.services.access.accounts import AccountService, hash_token, new_secret
from terrace.services.access.authz import Action, Authorizer
from terrace.services.access.organizations import OrganizationService
from terrace.services.access.store_team_tokens import TeamTokenStore
from terrace.services.access.teams import TeamService

_NEVER = "9999"  # sorts after every time: a token without an expiry or a use
SORTS: dict[str, Callable[[Token, dict[str, str]], Any]] = {
    "expired-at": lambda t, names: t.expires_at or _NEVER,
    "last-used-at": lambda t, names: t.last_used_at or _NEVER,
    "created-at": lambda t, names: t.created_at,
    "created-by": lambda t, names: t.created_by or ("", ""),
    "team-name": lambda t, names: names.get(t.subject_id, "").lower(),
}


def expiry_epoch(expired_at: Any, now: datetime) -> int:
    """`expired-at` (an RFC 3339 time) in epoch seconds; without one, the default expiry of a token created `now`.
    A time already past is taken (a client's clock may be off): the token is issued expired and never
    authenticates."""
    if expired_at is None:
        return int(default_expiry(now).timestamp())
    pointer = "/data/attributes/expired-at"
    try:
        moment = datetime.fromisoformat(str(expired_at).replace("Z", "+00:00"))
    except ValueError as exc:
        raise Invalid("expired-at must be an RFC 3339 time", pointer=pointer) from exc
    if moment.tzinfo is None:
        raise Invalid("expired-at needs a time zone", pointer=pointer)
    return int(moment.timestamp())


def _description(value: Any) -> str:
    """A described token's description: any text (the empty one too: it is a description, unlike none)."""
    return limits.text("" if value is None else value, "description", limits.DESCRIPTION_MAX)


class TeamTokenService:
    def __init__(
        self,
        store: TeamTokenStore,
        accounts: AccountService,
        teams: TeamService,
        organizations: OrganizationService,
        authz: Authorizer,
    ) -> None:
        self._store = store
        self._accounts = accounts
        self._teams = teams
        self._orgs = organizations
        self._authz = authz

    # creation ----------------------------------------------------------------------------
    def create(self, principal: Principal, team_id: str, attrs: dict[str, Any]) -> IssuedToken:
        """A described token (`description`, `expired-at`); ValidationFailed when the team has one of that
        description."""
        team = self._managed(principal, team_id)
        now = clock.utcnow()
        description, expires = _description(attrs.get("description")), self._expiry(team, attrs.get("expired-at"), now)
        return self._issue(principal, team, description, expires, now)

    def create_legacy(self, principal: Principal, team_id: str, expired_at: Any = None) -> IssuedToken:
        """The team's legacy token, replacing the one it had (its described tokens stay)."""
        team = self._managed(principal, team_id)
        now = clock.utcnow()
        expires = self._expiry(team, expired_at, now)
        self._revoke_legacy(team.id)
        return self._issue(principal, team, None, expires, now)

    def _expiry(self, team: Team, expired_at: Any, now: datetime) -> int:
        """`expiry_epoch`, within the organization's team token TTL policy (`domain/token_ttl_policies.py`)."""
        settings = self._orgs.by_key(team.organization).settings
        return capped_expiry(settings, "team", now.timestamp(), expiry_epoch(expired_at, now), expired_at is not None)

    def _issue(
        self, principal: Principal, team: Team, description: str | None, expires: int, now: datetime
    ) -> IssuedToken:
        raw = new_secret()
        token = Token(new_id("at"), PrincipalKind.TEAM, team.id, description or "", clock.iso(now), None,
                      clock.iso(datetime.fromtimestamp(expires, UTC)), team.organization,
                      named=description is not None, created_by=creator_of(principal))  # fmt: skip
        self._store.add(token, hash_token(raw), expires)
        return IssuedToken(self._shown(token), raw)

    # the legacy token --------------------------------------------------------------------
    def legacy(self, principal: Principal, team_id: str) -> Token:
        team = self._managed(principal, team_id)
        tokens = self._legacy_of(team.id)
        if not tokens:
            raise NotFound(f"team {team_id} has no token")
        return self._shown(tokens[-1])

    def delete_legacy(self, principal: Principal, team_id: str) -> None:
        team = self._managed(principal, team_id)
        if not self._legacy_of(team.id):
            raise NotFound(f"team {team_id} has no token")
        self._revoke_legacy(team.id)

    # lists -------------------------------------------------------------------------------
    def of_team(self, principal: Principal, team_id: str) -> list[Token]:
        """Every token of the team, legacy and described, oldest first."""
        team = self._managed(principal, team_id)
        return [self._shown(t) for t in self._accounts.list_tokens(team.id)]

    def of_organization(self, principal: Principal, organization: str, query: str = "", sort: str = "") -> list[Token]:
        """The tokens of the organization's teams whose tokens the caller manages (`q`: a part of the team's name),
        by `sort` (SORTS, a leading - reverses; by default by expiry, soonest first, as HCP Terraform lists them)."""
        key = SORTS.get((sort or "expired-at").removeprefix("-"))
        if key is None:
            raise Invalid(f"sort must be one of {', '.join(SORTS)}, optionally after a -", pointer="/sort")
        teams = [t for t in self.manageable_teams(principal, organization) if query.casefold() in t.name.casefold()]
        names = {t.id: t.name for t in teams}
        tokens = [self._shown(token) for team in teams for token in self._accounts.list_tokens(team.id)]
        return sorted(tokens, key=lambda t: key(t, names), reverse=sort.startswith("-"))

    def manageable_teams(self, principal: Principal, organization: str) -> list[Team]:
        """The organization's teams whose tokens the caller may create, read and revoke."""
        org = self._orgs.get(principal, organization, Action.READ_TEAMS)
        return [t for t in self._teams.list_of(principal, org) if self._may(principal, org, t)]

    # by id (GET and DELETE /authentication-tokens/:id) -----------------------------------
    def by_id(self, principal: Principal, token_id: str) -> Token:
        """The token with this id: a team's to whoever manages its tokens, a user's to its user (or a site admin),
        NotFound to anyone else; an agent pool's is returned for the agent pools' own check (their area is above
        this one: the route hands it over)."""
        token = self._accounts.get_token(token_id)
        if token.kind is PrincipalKind.AGENT:
            return token
        try:
            if token.kind is PrincipalKind.TEAM:
                self._managed(principal, token.subject_id)
                return self._shown(token)
            if token.kind is PrincipalKind.USER and principal.kind is PrincipalKind.USER:
                if principal.subject_id == token.subject_id or principal.site_admin:
                    return token
            if token.kind is PrincipalKind.SCIM and principal.kind is PrincipalKind.USER and principal.site_admin:
                return token  # the site admin's SCIM tokens (admin/scim-tokens) are revoked here, as TFE does
        except (Forbidden, NotFound):
            pass
        raise NotFound(f"authentication token {token_id} not found")

    def revoke(self, principal: Principal, token_id: str) -> Token | None:
        """Revoke a user's or a team's token (as `by_id` reads it); an agent pool's is returned unrevoked, for the
        agent pools' own check and revocation."""
        token = self.by_id(principal, token_id)
        if token.kind is PrincipalKind.AGENT:
            return token
        self._accounts.revoke_token(token.id)
        return None

    def revoke_all(self, team_id: str) -> None:
        """When a team is deleted every token of it dies with it."""
        self._revoke(self._accounts.list_tokens(team_id))

    # helpers -----------------------------------------------------------------------------
    def _managed(self, principal: Principal, team_id: str) -> Team:
        team = self._teams.get(principal, team_id)
        self._authz.require_team_tokens(principal, self._orgs.by_key(team.organization).view, team)
        return team

    def _may(self, principal: Principal, org: Organization, team: Team) -> bool:
        try:
            self._authz.require_team_tokens(principal, org.view, team)
        except (Forbidden, NotFound):
            return False
        return True

    def _shown(self, token: Token) -> Token:
        """As responses show it: an organization that created it by its current name."""
        if token.created_by and token.created_by[0] == "organizations":
            return dataclasses.replace(token, created_by=("organizations", self._orgs.name_of(token.created_by[1])))
        return token

    def _legacy_of(self, team_id: str) -> list[Token]:
        return [t for t in self._accounts.list_tokens(team_id) if not t.named]

    def _revoke_legacy(self, team_id: str) -> None:
        self._revoke(self._legacy_of(team_id))

    def _revoke(self, tokens: list[Token]) -> None:
        for token in tokens:
            try:
                self._accounts.revoke_token(token.id)
            except NotFound:
                pass
