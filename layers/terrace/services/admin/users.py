"""The site admin API's users (`/api/v2/admin/users`): list with organizations, suspend, grant or revoke the
site-admin right, delete. Every call checks that the caller is a site admin first (404 to anyone else)."""

from __future__ import annotations

import builtins

from terrace.domain.errors import Invalid
from terrace.domain.principal import Principal
from terrace.services.access.accounts import AccountService, User
from terrace.services.access.authz import Authorizer
from terrace.services.access.memberships import MembershipService
from terrace.services.access.organizations import Organization, OrganizationService
from terrace.services.access.users import UserService

FLAGS: dict[str, dict[str, bool]] = {
    "suspend": {"suspended": True},
    "unsuspend": {"suspended": False},
    "grant_admin": {"site_admin": True},
    "revoke_admin": {"site_admin": False},
    "grant_auditor": {"site_auditor": True},  # a read-only auditor: every organization's settings and audit trail
    "revoke_auditor": {"site_auditor": False},
}


def _flag(name: str, raw: str | None) -> bool | None:
    """`filter[name]=true|false` as a bool; absent = None (read after the site-admin check: a 404 to others)."""
    if raw in (None, ""):
        return None
    if raw not in ("true", "false"):
        raise Invalid(f"filter[{name}] must be true or false", pointer=f"/filter[{name}]")
    return raw == "true"


class SiteAdminUsers:
    def __init__(
        self,
        authz: Authorizer,
        accounts: AccountService,
        users: UserService,
        organizations: OrganizationService,
        memberships: MembershipService,
    ) -> None:
        self._authz, self._accounts, self._users = authz, accounts, users
        self._orgs, self._memberships = organizations, memberships

    def list(
        self, principal: Principal, query: str, *, admin: str | None, suspended: str | None
    ) -> builtins.list[User]:
        """Users matching `query` and the `filter[admin]`, `filter[suspended]` values (true, false or absent),
        oldest first: the first site admin leads."""
        self._authz.require_site_admin(principal)
        found = self._users.list(query, admin=_flag("admin", admin), suspended=_flag("suspended", suspended))
        return sorted(found, key=lambda u: (u.created_at, u.username))

    def organizations_of(
        self, principal: Principal, users: builtins.list[User]
    ) -> tuple[dict[str, builtins.list[str]], builtins.list[Organization]]:
        """user id -> the names of the organizations it owns or is a member of, and those organizations."""
        self._authz.require_site_admin(principal)
        orgs = self._orgs.all()
        members = self._memberships.member_keys([u.id for u in users], [o.key for o in orgs])
        of_user = {u.id: [o.name for o in orgs if u.id in o.owners or o.key in members.get(u.id, set())] for u in users}
        return of_user, [o for o in orgs if any(o.name in names for names in of_user.values())]

    def delete(self, principal: Principal, user_id: str) -> None:
        self._authz.require_site_admin(principal)
        if user_id == principal.subject_id:
            raise Invalid("a site admin cannot delete their own user", pointer="/id")
        self._users.delete(user_id)

    def act(self, principal: Principal, user_id: str, action: str) -> User:
        """One of the user actions (`FLAGS`, or `disable_two_factor`: Terrace users have none, nothing changes)."""
        self._authz.require_site_admin(principal)
        if action == "disable_two_factor":
            return self._accounts.get_user(user_id)
        if action not in FLAGS:
            raise Invalid(f"unknown user action {action!r}", pointer="/action")
        if user_id == principal.subject_id and action in ("suspend", "revoke_admin"):
            raise Invalid(f"a site admin cannot {action.replace('_', ' ')} themselves", pointer="/id")
        return self._users.set_flags(user_id, **FLAGS[action])
