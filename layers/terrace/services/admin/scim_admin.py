"""The site admin's side of SCIM (TFE's `admin/scim-tokens`, `admin/scim-groups`, `admin/teams/:id/scim-group-mapping`,
`DELETE admin/scim-settings`). Every method asks `Authorizer.require_site_admin` first.

SCIM tokens are access tokens of their own kind (`PrincipalKind.SCIM`): shown once, stored as a hash, valid for
29 to 365 days (365 when not said), accepted by `/scim/v2` only and by nothing else; revoked through
`DELETE /authentication-tokens/:id` as TFE does. Turning SCIM off revokes them and forgets its groups (their
teams are unlinked and keep their members); the users it provisioned stay."""

from __future__ import annotations

import builtins
from datetime import datetime
from typing import Any

from terrace.domain import clock, limits
from terrace.domain.errors import Conflict, Invalid, NotFound
from terrace.domain.principal import Principal, PrincipalKind
from terrace.domain.teams import Team
from terrace.domain.tokens import IssuedToken, Token
from terrace.services.access.accounts import AccountService
from terrace.services.access.authz import Authorizer
from terrace.services.access.teams import TeamService
from terrace.services.admin.scim_groups import ScimGroups
from terrace.services.admin.settings import AdminSettings
from terrace.services.admin.store_scim import ScimStore

SUBJECT = "scim"  # the subject of every SCIM token: the installation's identity provider
DAY_S = 86400
TTL_MIN_S, TTL_MAX_S, TTL_DEFAULT_S = 29 * DAY_S, 365 * DAY_S, 365 * DAY_S
TTL_SLACK_S = 60  # a client computes "365 days from now" a moment before the server reads it


class ScimAdmin:
    def __init__(
        self,
        authz: Authorizer,
        settings: AdminSettings,
        store: ScimStore,
        groups: ScimGroups,
        accounts: AccountService,
        teams: TeamService,
    ) -> None:
        self._authz, self._settings, self._store, self._groups = authz, settings, store, groups
        self._accounts, self._teams = accounts, teams

    # tokens --------------------------------------------------------------------------------------------------
    def create_token(self, principal: Principal, attrs: dict[str, Any]) -> IssuedToken:
        self._authz.require_site_admin(principal)
        description = attrs.get("description")
        if not isinstance(description, str) or not description.strip():
            raise Invalid("SCIM token description can't be blank", pointer="/data/attributes/description")
        description = limits.text(description, "description", limits.DESCRIPTION_MAX)
        now = clock.epoch()
        expires = now + TTL_DEFAULT_S
        if attrs.get("expired-at") is not None:
            expires = _epoch(attrs["expired-at"])
            if not now + TTL_MIN_S - TTL_SLACK_S <= expires <= now + TTL_MAX_S + TTL_SLACK_S:
                raise Invalid("expired-at must be 29 to 365 days from now", pointer="/data/attributes/expired-at")
        return self._accounts.issue_token(PrincipalKind.SCIM, SUBJECT, description=description,
                                          expires_epoch=int(expires))  # fmt: skip

    def tokens(self, principal: Principal) -> builtins.list[Token]:
        self._authz.require_site_admin(principal)
        return [t for t in self._accounts.list_tokens(SUBJECT) if t.kind is PrincipalKind.SCIM]

    def token(self, principal: Principal, token_id: str) -> Token:
        self._authz.require_site_admin(principal)
        try:
            token = self._accounts.get_token(token_id)
        except NotFound:
            token = None
        if token is None or token.kind is not PrincipalKind.SCIM:
            raise NotFound(f"SCIM token {token_id} not found")
        return token

    # groups and their teams ----------------------------------------------------------------------------------
    def groups(self, principal: Principal, query: str = "") -> builtins.list[dict[str, Any]]:
        """The SCIM groups whose name holds `query` (any case), oldest first."""
        self._authz.require_site_admin(principal)
        needle = query.lower()
        return [g for g in self._store.list("group") if needle in g["display_name"].lower()]

    def map_team(self, principal: Principal, team_id: str, group_id: Any) -> Team:
        self._authz.require_site_admin(principal)
        team = self._teams.load(team_id)
        if not isinstance(group_id, str) or not group_id:
            raise Invalid("scim-group-id is required", pointer="/data/attributes/scim-group-id")
        group = self._groups.load(group_id)
        if team.scim is not None:
            raise Conflict("Team is already linked to a SCIM group")
        if team.owners:
            raise Invalid("Owners team SCIM linking is not yet supported", pointer="/data/attributes/scim-group-id")
        if self._settings.scim_state()["site-admin-group-scim-id"] == group_id:
            raise Invalid("The site admin group cannot be linked to a team", pointer="/data/attributes/scim-group-id")
        return self._groups.link(team, group, paused=False)

    def pause_team(self, principal: Principal, team_id: str, paused: Any) -> Team:
        self._authz.require_site_admin(principal)
        team = self._teams.load(team_id)
        if not isinstance(paused, bool):
            raise Invalid("scim-sync-paused must be true or false", pointer="/data/attributes/scim-sync-paused")
        if team.scim is None:
            raise Conflict("Team is not linked to a SCIM group")
        return self._groups.link(team, self._groups.load(team.scim.group_id), paused=paused)

    def unmap_team(self, principal: Principal, team_id: str) -> None:
        self._authz.require_site_admin(principal)
        team = self._teams.load(team_id)
        if team.scim is None:
            raise Conflict("Team is not linked to a SCIM group")
        self._groups.unlink(team)

    # off -----------------------------------------------------------------------------------------------------
    def disable(self, principal: Principal) -> None:
        """SCIM off: its tokens revoked, its groups forgotten (their teams unlinked); provisioned users stay."""
        self._settings.disable_scim(principal)
        for token in self._accounts.list_tokens(SUBJECT):
            self._accounts.revoke_token(token.id)
        for group in self._store.list("group"):
            self._groups.forget(group)


def _epoch(value: Any) -> float:
    if not isinstance(value, str):
        raise Invalid("expired-at must be an ISO 8601 time", pointer="/data/attributes/expired-at")
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError as exc:
        raise Invalid("expired-at must be an ISO 8601 time", pointer="/data/attributes/expired-at") from exc
