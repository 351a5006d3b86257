"""Organization tokens: one live token per organization (a new one replaces the old), optional `expired-at` (without
one, `tokens.default_expiry`, as HCP Terraform has it); `created-by` is who created it.
Revoked or expired tokens fail on the very next request: authentication reads the token's lookup item every time.
(Team tokens: `team_tokens.py`.)"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from terrace.domain import clock
from terrace.domain.errors import Invalid, NotFound
from terrace.domain.principal import Principal, PrincipalKind
from terrace.domain.token_ttl_policies import capped_expiry
from terrace.domain.tokens import IssuedToken, Token, audit_trail_subject, creator_of, default_expiry
from terrace.services.access.accounts import AccountService
from terrace.services.access.authz import Action
from terrace.services.access.organizations import OrganizationService


def ttl_of(expired_at: Any) -> int | None:
    """Seconds until `expired-at` (an RFC 3339 time), or None for no expiry. A time already past is taken,
    as HCP Terraform does: the token is issued expired and never authenticates."""
    if expired_at in (None, ""):
        return None
    try:
        moment = datetime.fromisoformat(str(expired_at).replace("Z", "+00:00"))
    except ValueError as exc:
        raise Invalid("expired-at must be an RFC 3339 time", pointer="/data/attributes/expired-at") from exc
    if moment.tzinfo is None:
        raise Invalid("expired-at needs a time zone", pointer="/data/attributes/expired-at")
    return math.ceil(moment.timestamp() - clock.epoch())


def _kind(org_key: str, kind: str | None) -> tuple[str, PrincipalKind, str]:
    """(the token's subject, its principal kind, its TTL policy kind) for go-tfe's `token` (`audit-trails`: HCP's
    audit trail token, which reaches nothing here, Terrace keeping no audit trail)."""
    if kind in (None, "", "organization"):
        return org_key, PrincipalKind.ORGANIZATION, "organization"
    if kind == "audit-trails":
        return audit_trail_subject(org_key), PrincipalKind.AUDIT_TRAIL, "audit_trails"
    raise Invalid(f"token must be organization or audit-trails, not {str(kind)[:64]}", pointer="/token")


class ServiceTokenService:
    def __init__(self, accounts: AccountService, organizations: OrganizationService) -> None:
        self._accounts = accounts
        self._orgs = organizations

    # organization tokens -----------------------------------------------------------------
    def create_organization_token(
        self, principal: Principal, organization: str, expired_at: Any = None, kind: str | None = None
    ) -> IssuedToken:
        """The organization token, or (`kind` `audit-trails`) its audit trail token: each replaces its own kind."""
        org = self._orgs.get(principal, organization, Action.MANAGE_ORGANIZATION)
        subject, principal_kind, policy = _kind(org.key, kind)
        ttl, now = ttl_of(expired_at), clock.utcnow()
        asked = int(now.timestamp()) + ttl if ttl is not None else None
        default = int(default_expiry(now).timestamp())  # HCP Terraform's default expiry
        expires = capped_expiry(org.settings, policy, now.timestamp(),
                                asked if asked is not None else default, asked is not None)  # fmt: skip
        self._revoke_all(subject)
        return self._accounts.issue_token(
            principal_kind, subject, organization=org.key, expires_epoch=expires,
            description=f"{principal_kind.value} token", created_by=creator_of(principal),
        )  # fmt: skip

    def organization_token(self, principal: Principal, organization: str, kind: str | None = None) -> Token:
        org = self._orgs.get(principal, organization, Action.MANAGE_ORGANIZATION)
        return self._latest(_kind(org.key, kind)[0], f"organization {organization} has no such token")

    def delete_organization_token(self, principal: Principal, organization: str, kind: str | None = None) -> None:
        org = self._orgs.get(principal, organization, Action.MANAGE_ORGANIZATION)
        subject = _kind(org.key, kind)[0]
        self._latest(subject, f"organization {organization} has no such token")
        self._revoke_all(subject)

    # helpers -----------------------------------------------------------------------------
    def _latest(self, subject_id: str, missing: str) -> Token:
        tokens = self._accounts.list_tokens(subject_id)
        if not tokens:
            raise NotFound(missing)
        return tokens[-1]

    def _revoke_all(self, subject_id: str) -> None:
        for token in self._accounts.list_tokens(subject_id):
            try:
                self._accounts.revoke_token(token.id)
            except NotFound:
                pass
