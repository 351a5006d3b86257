"""API tokens (user, team, organization, runner, run): the secret is shown once and stored
only as a hash, so an issued token carries it beside the stored record.

A team has any number of described tokens (`named`: each description unique in its team, the empty one too) and at
most one legacy token, without a description (`POST /teams/:id/authentication-token` replaces it). A team token
asked for without an expiry expires `DEFAULT_TTL_YEARS` later (`default_expiry`), as HCP Terraform's do."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from terrace.domain.principal import Principal, PrincipalKind

# HCP Terraform's default lifetime of a token created without `expired-at`: two calendar years (go-tfe's tests
# compare it with the creation time plus two years, within a minute).
DEFAULT_TTL_YEARS = 2

# The JSON:API type of a token's creator, by the kind of principal that created it.
CREATOR_TYPES = {
    PrincipalKind.USER: "users",
    PrincipalKind.TEAM: "teams",
    PrincipalKind.ORGANIZATION: "organizations",
}


@dataclass(frozen=True)
class Token:
    id: str
    kind: PrincipalKind
    subject_id: str
    description: str
    created_at: str
    last_used_at: str | None
    expires_at: str | None
    organization: str | None = None
    workspace_id: str | None = None
    named: bool = False  # a team's described token (the legacy one, and tokens of other kinds, are not)
    created_by: tuple[str, str] | None = None  # (JSON:API type, id) of its creator, where recorded


@dataclass(frozen=True)
class IssuedToken:
    token: Token
    secret: str  # shown once, never stored


def creator_of(principal: Principal) -> tuple[str, str] | None:
    """Who creates a token, as stored: a user or team by id, an organization by its key (shown by its name)."""
    kind = CREATOR_TYPES.get(principal.kind)
    if kind is None:
        return None
    if principal.kind is PrincipalKind.ORGANIZATION:
        return (kind, principal.organization) if principal.organization else None
    return kind, principal.subject_id


def default_expiry(created: datetime) -> datetime:
    """When a token created at `created` without `expired-at` expires: the same day and time DEFAULT_TTL_YEARS
    later; from February 29, March 1 (as Go's `AddDate` counts)."""
    try:
        return created.replace(year=created.year + DEFAULT_TTL_YEARS)
    except ValueError:  # February 29 in a year that has none
        return created.replace(year=created.year + DEFAULT_TTL_YEARS, day=28) + timedelta(days=1)


def audit_trail_subject(organization_key: str) -> str:
    """Whose an organization's audit trail token is (its organization token is the organization key's)."""
    return f"{organization_key}#audit-trails"
