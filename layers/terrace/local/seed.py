"""First data of a fresh stack: a site-admin user with a token, and one organization it owns."""

from __future__ import annotations

from dataclasses import dataclass

from terrace.bootstrap import Container
from terrace.domain.errors import Conflict
from terrace.domain.principal import Principal, PrincipalKind

ADMIN_USERNAME = "admin"
ADMIN_EMAIL = "admin@example.com"


@dataclass(frozen=True)
class Seeded:
    user_id: str
    username: str
    token: str  # the raw secret: shown to the developer, stored only hashed
    organization: str


def seed_admin(
    container: Container, organization: str, *, username: str = ADMIN_USERNAME, token: str | None = None
) -> Seeded:
    """The admin user, its organization and a token: `token` (one that still works, kept by the embedded
    server across restarts) or a new one."""
    user = container.accounts.find_user(username) or container.accounts.create_user(
        username, ADMIN_EMAIL, site_admin=True
    )
    secret = token or container.accounts.issue_token(PrincipalKind.USER, user.id, description="local dev stack").secret
    principal = Principal(PrincipalKind.USER, user.id, user.username, site_admin=user.site_admin)
    try:
        container.organizations.create(principal, organization, ADMIN_EMAIL)
    except Conflict:
        container.organizations.add_owner(organization, user.id)
    return Seeded(user.id, user.username, secret, organization)
