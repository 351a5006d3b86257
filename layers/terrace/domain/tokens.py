"""API tokens (user, team, organization, runner, run): the secret is shown once and stored
only as a hash, so an issued token carries it beside the stored record."""

from __future__ import annotations

from dataclasses import dataclass

from terrace.domain.principal import PrincipalKind


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


@dataclass(frozen=True)
class IssuedToken:
    token: Token
    secret: str  # shown once, never stored
