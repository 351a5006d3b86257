"""Storage of users and their API tokens (part of the access store, `store.py`).

Items: a user `user-…`/`user` (listed under gsi1 `users` by username), its name claim `username#<name>`/`claim`, an
e-mail invitation's claim `useremail#<address>`/`claim`; a token and its lookup (their keys and mapping:
`store_token_items.py`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from terrace.adapters.table import Check, ConditionFailed, Delete, Put, Table, WriteOp
from terrace.domain.errors import Conflict, NotFound
from terrace.domain.principal import PrincipalKind
from terrace.domain.tokens import Token
from terrace.domain.users import User
from terrace.services.access.store_token_items import (
    TokenLookup,
    lookup_from_item,
    lookup_key,
    revocation,
    token_from_item,
    token_items,
    token_key,
    tokens_index,
)

USERS_INDEX = "users"
RUNNER_TOKEN_SUBJECT = "#runners"  # not a valid organization name: runner tokens list apart from any org's


def user_key(user_id: str) -> tuple[str, str]:
    return user_id, "user"


def username_claim_key(username: str) -> tuple[str, str]:
    return f"username#{username}", "claim"


def email_claim_key(address: str) -> tuple[str, str]:
    return f"useremail#{address}", "claim"


def user_from_item(item: dict[str, Any]) -> User:
    return User(
        item["id"],
        item["username"],
        item.get("email", ""),
        bool(item.get("site_admin")),
        item["created_at"],
        bool(item.get("suspended")),
        item.get("scim_username", ""),
        item.get("scim_updated_at", ""),
        bool(item.get("site_auditor")),
    )


# any of username, email, site_admin, site_auditor, suspended, scim_username, scim_updated_at
UserChanges = dict[str, Any]


class AccountStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    # users -------------------------------------------------------------------------------
    def create_user(self, user: User) -> None:
        """A new user with its name claim; Conflict when the name is taken."""
        item = {"pk": user.id, "sk": "user", "id": user.id, "username": user.username, "email": user.email,
                "site_admin": user.site_admin, "created_at": user.created_at, "version": 1,
                "gsi1pk": USERS_INDEX, "gsi1sk": user.username}  # fmt: skip
        pk, sk = username_claim_key(user.username)
        try:
            self._table.transact([Put({"pk": pk, "sk": sk, "user_id": user.id}, if_absent=True),
                                  Put(item, if_absent=True)])  # fmt: skip
        except ConditionFailed as exc:
            raise Conflict(f"username {user.username!r} is taken") from exc

    def discard_new_user(self, user: User) -> None:
        """The user and its name claim, only while the user is unchanged since its creation."""
        self._table.transact([Delete(*user_key(user.id), if_version=1), Delete(*username_claim_key(user.username))])

    def user(self, user_id: str) -> User | None:
        item = self._table.get(*user_key(user_id))
        return user_from_item(item) if item else None

    def users(self, user_ids: list[str]) -> list[User]:
        return [user_from_item(item) for item in self._table.batch_get([user_key(i) for i in user_ids])]

    def user_ids(self) -> list[str]:
        """Every user's id, by username."""
        return [item["id"] for item in self._table.query(USERS_INDEX, index="gsi1")]

    def user_id_of(self, username: str) -> str | None:
        """The id of the user named `username` (one read: its name claim), or None."""
        claim = self._table.get(*username_claim_key(username))
        return str(claim["user_id"]) if claim else None

    def user_id_by_email(self, address: str) -> str | None:
        claim = self._table.get(*email_claim_key(address))
        return str(claim["user_id"]) if claim else None

    def claim_email(self, address: str, user_id: str) -> None:
        """The account an e-mail invitation made for `address` (found again by the next invitation)."""
        pk, sk = email_claim_key(address)
        self._table.put({"pk": pk, "sk": sk, "user_id": user_id})

    def claim_email_if_free(self, address: str, user_id: str) -> bool:
        """Claim `address` for `user_id` unless another account claimed it first (then False)."""
        pk, sk = email_claim_key(address)
        try:
            self._table.put({"pk": pk, "sk": sk, "user_id": user_id}, if_absent=True)
        except ConditionFailed:
            return False
        return True

    def _user_item(self, user_id: str) -> dict[str, Any]:
        item = self._table.get(*user_key(user_id)) if user_id.startswith("user-") else None
        if item is None:
            raise NotFound(f"user {user_id} not found")
        item.setdefault("version", 1)
        item.setdefault("gsi1pk", USERS_INDEX)  # users created before the admin list existed join it on change
        item.setdefault("gsi1sk", item["username"])
        return item

    def versioned_user(self, user_id: str) -> tuple[User, int]:
        """The user and the version read (NotFound for anything but a user's id)."""
        item = self._user_item(user_id)
        return user_from_item(item), int(item["version"])

    def change_user(self, user_id: str, decide: Callable[[User], UserChanges], conflict: str) -> None:
        """Read the user, apply what `decide` returns for it (a new username moves its name claim), write it back
        over the version read; Conflict(`conflict`) when it changed meanwhile or the new name is taken."""
        item = self._user_item(user_id)
        changes = decide(user_from_item(item))
        ops: list[WriteOp] = []
        new_name = changes.pop("username", None)
        if new_name is not None:
            pk, sk = username_claim_key(new_name)
            ops += [Delete(*username_claim_key(item["username"])),
                    Put({"pk": pk, "sk": sk, "user_id": user_id}, if_absent=True)]  # fmt: skip
            item.update(username=new_name, gsi1sk=new_name)
        item.update(changes)
        version = item["version"]
        item["version"] = version + 1
        try:
            self._table.transact([*ops, Put(item, if_version=version)])
        except ConditionFailed as exc:
            raise Conflict(conflict) from exc

    def delete_user(self, user: User, version: int) -> None:
        self._table.transact(
            [Delete(*user_key(user.id), if_version=version), Delete(*username_claim_key(user.username))]
        )

    # tokens ------------------------------------------------------------------------------
    def add_token(self, token: Token, token_hash: str, expires_epoch: int | None) -> None:
        """Store a new token and its lookup in one transaction. A user's token copies the user's name and flags
        into its lookup and refuses a suspended user (Conflict: a token minted while suspended would start working
        when they are unsuspended); the user's version read is checked in the same transaction, so a suspension
        between the two makes it fail (ConditionFailed: decide again)."""
        item, lookup = token_items(token, token_hash, expires_epoch)
        ops = [self._user_unchanged(token.subject_id, lookup)] if token.kind is PrincipalKind.USER else []
        self._table.transact([*ops, Put(item, if_absent=True), Put(lookup, if_absent=True)])

    def _user_unchanged(self, user_id: str, lookup: dict[str, Any]) -> Check:
        user_item = self._table.get(*user_key(user_id))
        if user_item is None:
            raise NotFound(f"user {user_id} not found")
        user = user_from_item(user_item)
        if user.suspended:
            raise Conflict(f"user {user.username} is suspended: no token can be issued until they are unsuspended")
        lookup.update(username=user.username, site_admin=user.site_admin, site_auditor=user.site_auditor)
        lookup.update(suspended=False)
        return Check(*user_key(user_id), if_version=user_item.get("version"))

    def lookup(self, token_hash: str) -> TokenLookup | None:
        item = self._table.get(*lookup_key(token_hash))
        return lookup_from_item(item) if item else None

    def record_use(self, lookup: TokenLookup, now: int, when: str) -> bool:
        """Write the token's last use on its lookup, over the version read (False when that changed: a concurrent
        use, a revocation, a change of the user's flags)."""
        assert lookup.version is not None
        used = {"last_used_epoch": now, "last_used_at": when, "version": lookup.version + 1}
        try:
            self._table.put({**lookup.item, **used}, if_version=lookup.version)
        except ConditionFailed:
            return False
        return True

    def tokens_of(self, subject_id: str) -> list[Token]:
        """The subject's tokens, oldest first, each with its last use (recorded on its lookup)."""
        items = self._table.query(tokens_index(subject_id), index="gsi1")
        lookups = self._table.batch_get([lookup_key(item["hash"]) for item in items])
        used = {lookup["token_id"]: lookup.get("last_used_at") for lookup in lookups}
        return [token_from_item({**item, "last_used_at": used.get(item["id"]) or item.get("last_used_at")})
                for item in items]  # fmt: skip

    def token(self, token_id: str) -> Token:
        item = self._table.get(*token_key(token_id))
        if item is None:
            raise NotFound(f"authentication token {token_id} not found")
        lookup = self._table.get(*lookup_key(item["hash"])) or {}
        return token_from_item({**item, "last_used_at": lookup.get("last_used_at") or item.get("last_used_at")})

    def revoke(self, token_id: str) -> None:
        item = self._table.get(*token_key(token_id))
        if item is None:
            raise NotFound(f"authentication token {token_id} not found")
        claim = [Delete(*item["claim"])] if item.get("claim") else []  # a described team token's description
        self._table.transact([*revocation(token_id, item["hash"]), *claim])

    def revoke_of(self, subject_id: str, organization: str) -> None:
        """Revoke the subject's tokens bound to `organization` (one token missing meanwhile is fine)."""
        for token in self._table.query(tokens_index(subject_id), index="gsi1"):
            if token.get("organization") == organization:
                try:
                    self.revoke(token["id"])
                except NotFound:
                    pass

    def refresh_lookups(self, user: User) -> None:
        """Re-write the lookups of a user's tokens after a change of name, admin flag or suspension."""
        changes = {"username": user.username, "site_admin": user.site_admin, "suspended": user.suspended,
                   "site_auditor": user.site_auditor}  # fmt: skip
        for token in self._table.query(tokens_index(user.id), index="gsi1"):
            lookup = self._table.get(*lookup_key(token["hash"]))
            if lookup is not None:  # a new version: a last-use write that read the old flags cannot restore them
                self._table.put({**lookup, **changes, "version": int(lookup.get("version", 0)) + 1})
