"""Changing users: a user's own name and email, and the site admin's user management (list, suspend,
grant or revoke admin, delete). Every change re-writes the user's token lookups, so it takes effect on
the next request; a suspension, a revoked site-admin right and a deletion also delete the user's web sessions."""

from __future__ import annotations

import builtins
import dataclasses
from typing import Any

from terrace.adapters.table import ConditionFailed, Delete, Put, Table, WriteOp
from terrace.domain import limits
from terrace.domain.errors import Conflict, Invalid, NotFound
from terrace.domain.users import User, check_username
from terrace.services.access.accounts import AccountService
from terrace.services.access.web_sessions import end_sessions

EMAIL_POINTER = "/data/attributes/email"


def check_email(value: Any) -> str:
    if not isinstance(value, str) or "@" not in value.strip("@") or any(c.isspace() for c in value):
        raise Invalid("email must be an address", pointer=EMAIL_POINTER)
    return limits.text(value, "email", limits.EMAIL_MAX)


class UserService:
    def __init__(self, table: Table, accounts: AccountService) -> None:
        self._table = table
        self._accounts = accounts

    def list(self, query: str = "", *, admin: bool | None = None, suspended: bool | None = None) -> builtins.list[User]:
        users = [self._accounts.get_user(item["id"]) for item in self._table.query("users", index="gsi1")]
        needle = query.lower()
        return [
            u
            for u in users
            if (not needle or needle in u.username.lower() or needle in u.email.lower())
            and (admin is None or u.site_admin == admin)
            and (suspended is None or u.suspended == suspended)
        ]

    def update(self, user_id: str, changes: dict[str, Any]) -> User:
        """username and email (PATCH /account/update); anything else in the body is ignored."""
        item = self._item(user_id)
        ops: builtins.list[WriteOp] = []
        if "email" in changes and changes["email"] is not None:
            item["email"] = check_email(changes["email"])
        new_name = changes.get("username")
        if new_name is not None and new_name != item["username"]:
            check_username(new_name)
            ops += [
                Delete(f"username#{item['username']}", "claim"),
                Put({"pk": f"username#{new_name}", "sk": "claim", "user_id": user_id}, if_absent=True),
            ]
            item.update(username=new_name, gsi1sk=new_name)
        return self._write(item, ops, f"username {new_name!r} is taken")

    def set_flags(self, user_id: str, *, site_admin: bool | None = None, suspended: bool | None = None) -> User:
        item = self._item(user_id)
        cut = suspended is True or (site_admin is False and bool(item.get("site_admin")))
        if site_admin is not None:
            item["site_admin"] = site_admin
        if suspended is not None:
            item["suspended"] = suspended
        user = self._write(item, [], "user changed concurrently; retry")
        if cut:  # sessions re-read the user on every request anyway; these are gone outright
            end_sessions(self._table, user_id)
        return user

    def delete(self, user_id: str) -> None:
        item = self._item(user_id)
        for token in self._accounts.list_tokens(user_id):
            self._accounts.revoke_token(token.id)
        self._table.transact(
            [Delete(user_id, "user", if_version=item.get("version")), Delete(f"username#{item['username']}", "claim")]
        )
        end_sessions(self._table, user_id)

    def _item(self, user_id: str) -> dict[str, Any]:
        item = self._table.get(user_id, "user") if user_id.startswith("user-") else None
        if item is None:
            raise NotFound(f"user {user_id} not found")
        item.setdefault("version", 1)
        item.setdefault("gsi1pk", "users")  # users created before the admin list existed join it on change
        item.setdefault("gsi1sk", item["username"])
        return item

    def _write(self, item: dict[str, Any], ops: builtins.list[WriteOp], conflict: str) -> User:
        version = item["version"]
        item["version"] = version + 1
        try:
            self._table.transact([*ops, Put(item, if_version=version)])
        except ConditionFailed as exc:
            raise Conflict(conflict) from exc
        user = self._accounts.get_user(item["id"])
        self._accounts.refresh_lookups(dataclasses.replace(user))
        return user
