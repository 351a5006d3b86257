"""Changing users: a user's own name and email, and the site admin's user management (list, suspend,
grant or revoke admin, delete). Every change re-writes the user's token lookups, so it takes effect on
the next request; a suspension, a revoked site-admin right and a deletion also delete the user's web sessions."""

from __future__ import annotations

import builtins
import dataclasses
from collections.abc import Callable
from typing import Any

from terrace.domain import limits
from terrace.domain.errors import Invalid
from terrace.domain.users import User, check_username
from terrace.services.access.accounts import AccountService
from terrace.services.access.store_accounts import AccountStore, UserChanges
from terrace.services.access.store_sign_in import SignInStore

EMAIL_POINTER = "/data/attributes/email"


def check_email(value: Any) -> str:
    if not isinstance(value, str) or "@" not in value.strip("@") or any(c.isspace() for c in value):
        raise Invalid("email must be an address", pointer=EMAIL_POINTER)
    return limits.text(value, "email", limits.EMAIL_MAX)


class UserService:
    def __init__(
        self,
        store: AccountStore,
        sessions: SignInStore,
        accounts: AccountService,
        scim_enabled: Callable[[], bool] = lambda: False,
    ) -> None:
        self._scim_enabled = scim_enabled  # the site admin's SCIM setting (admin/scim-settings)
        self._store = store
        self._sessions = sessions
        self._accounts = accounts

    def list(self, query: str = "", *, admin: bool | None = None, suspended: bool | None = None) -> builtins.list[User]:
        users = [self._accounts.get_user(user_id) for user_id in self._store.user_ids()]
        needle = query.lower()
        return [
            u
            for u in users
            if (not needle or needle in u.username.lower() or needle in u.email.lower())
            and (admin is None or u.site_admin == admin)
            and (suspended is None or u.suspended == suspended)
        ]

    def details(self, user_id: str) -> tuple[User, bool]:
        """The user, and whether SCIM provisioning is on (their SCIM attributes are shown then)."""
        return self._accounts.get_user(user_id), self._scim_enabled()

    def update(self, user_id: str, changes: dict[str, Any]) -> User:
        """username and email (PATCH /account/update); anything else in the body is ignored."""
        new_name = changes.get("username")

        def decide(user: User) -> UserChanges:
            decided: UserChanges = {}
            if "email" in changes and changes["email"] is not None:
                decided["email"] = check_email(changes["email"])
            if new_name is not None and new_name != user.username:
                check_username(new_name)
                decided["username"] = new_name
            return decided

        self._store.change_user(user_id, decide, f"username {new_name!r} is taken")
        return self._changed(user_id)

    def set_flags(
        self,
        user_id: str,
        *,
        site_admin: bool | None = None,
        suspended: bool | None = None,
        site_auditor: bool | None = None,
    ) -> User:
        cut = False

        def decide(user: User) -> UserChanges:
            nonlocal cut
            cut = suspended is True or (site_admin is False and user.site_admin)
            cut = cut or (site_auditor is False and user.site_auditor)
            decided: UserChanges = {}
            if site_admin is not None:
                decided["site_admin"] = site_admin
            if suspended is not None:
                decided["suspended"] = suspended
            if site_auditor is not None:
                decided["site_auditor"] = site_auditor
            return decided

        self._store.change_user(user_id, decide, "user changed concurrently; retry")
        user = self._changed(user_id)
        if cut:  # sessions re-read the user on every request anyway; these are gone outright
            self._sessions.end_sessions(user_id)
        return user

    def set_scim(self, user_id: str, scim_username: str, updated_at: str) -> User:
        """Mark the user provisioned by SCIM under `scim_username` ("": no longer)."""
        self._store.change_user(
            user_id, lambda _user: {"scim_username": scim_username, "scim_updated_at": updated_at},
            "user changed concurrently; retry",
        )  # fmt: skip
        return self._changed(user_id)

    def delete(self, user_id: str) -> None:
        user, version = self._store.versioned_user(user_id)
        for token in self._accounts.list_tokens(user_id):
            self._accounts.revoke_token(token.id)
        self._store.delete_user(user, version)
        self._sessions.end_sessions(user_id)

    def _changed(self, user_id: str) -> User:
        user = self._accounts.get_user(user_id)
        self._accounts.refresh_lookups(dataclasses.replace(user))
        return user
