"""Users and their API tokens. Tokens are random secrets stored only as SHA-256 hashes."""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from terrace.adapters.table import Check, ConditionFailed, Delete, Put, Table, WriteOp
from terrace.domain import clock
from terrace.domain.errors import Conflict, NotFound, Unauthenticated
from terrace.domain.ids import new_id
from terrace.domain.principal import Principal, PrincipalKind
from terrace.domain.tokens import IssuedToken, Token
from terrace.domain.users import User, check_username
from terrace.services.optimistic import optimistic

TOKEN_PREFIX = "terrace"
ISSUE_ATTEMPTS = 3
# A token's last use is recorded at most once per this many seconds: a busy token (a runner's heartbeat, a CI
# loop) costs one conditional write per period, not one per request.
LAST_USED_EVERY_S = 300


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def revocation(token_id: str, token_hash: str) -> list[WriteOp]:
    """The writes that revoke a token, in one transaction: its lookup (what authenticates) and the token go
    together (missing ones are fine: a token revoked twice)."""
    return [Delete(f"tokenhash#{token_hash}", "lookup"), Delete(token_id, "token")]


def _new_secret() -> str:
    return f"{secrets.token_hex(7)}.{TOKEN_PREFIX}.{secrets.token_urlsafe(40)}"


def _user(item: dict[str, Any]) -> User:
    return User(
        item["id"],
        item["username"],
        item.get("email", ""),
        bool(item.get("site_admin")),
        item["created_at"],
        bool(item.get("suspended")),
    )


def _token(item: dict[str, Any]) -> Token:
    return Token(
        id=item["id"],
        kind=PrincipalKind(item["kind"]),
        subject_id=item["subject_id"],
        description=item.get("description", ""),
        created_at=item["created_at"],
        last_used_at=item.get("last_used_at"),
        expires_at=item.get("expires_at_iso"),
        organization=item.get("organization"),
        workspace_id=item.get("workspace_id"),
    )


class AccountService:
    def __init__(self, table: Table) -> None:
        self._table = table

    # users -------------------------------------------------------------------------------
    def create_user(self, username: str, email: str = "", *, site_admin: bool = False) -> User:
        check_username(username)
        user_id = new_id("user")
        item = {
            "pk": user_id,
            "sk": "user",
            "id": user_id,
            "username": username,
            "email": email,
            "site_admin": site_admin,
            "created_at": clock.now_iso(),
            "version": 1,
            "gsi1pk": "users",
            "gsi1sk": username,
        }
        claim = {"pk": f"username#{username}", "sk": "claim", "user_id": user_id}
        try:
            self._table.transact([Put(claim, if_absent=True), Put(item, if_absent=True)])
        except ConditionFailed as exc:
            raise Conflict(f"username {username!r} is taken") from exc
        return _user(item)

    def discard_new_user(self, user: User) -> None:
        """Undo `create_user` for a user nothing refers to yet (a first sign-in that lost a race): the user and
        its name claim, only while the user is unchanged since its creation."""
        self._table.transact([Delete(user.id, "user", if_version=1), Delete(f"username#{user.username}", "claim")])

    def get_user(self, user_id: str) -> User:
        item = self._table.get(user_id, "user")
        if item is None:
            raise NotFound(f"user {user_id} not found")
        return _user(item)

    def get_users(self, user_ids: list[str]) -> list[User]:
        return [_user(item) for item in self._table.batch_get([(i, "user") for i in user_ids])]

    def find_user(self, username: str) -> User | None:
        user_id = self.user_id_of(username)
        return self.get_user(user_id) if user_id else None

    def user_id_of(self, username: str) -> str | None:
        """The id of the user named `username` (one read: its name claim), or None."""
        claim = self._table.get(f"username#{username}", "claim")
        return str(claim["user_id"]) if claim else None

    # tokens ------------------------------------------------------------------------------
    def issue_token(
        self,
        kind: PrincipalKind,
        subject_id: str,
        *,
        description: str = "",
        organization: str | None = None,
        workspace_id: str | None = None,
        ttl_s: int | None = None,
        secret: str | None = None,
        expires_epoch: int | None = None,
        token_id: str | None = None,  # chosen beforehand (a runner's, named when its task was started)
    ) -> IssuedToken:
        raw = secret or _new_secret()
        token_id = token_id or new_id("at")
        now = clock.utcnow()
        item: dict[str, Any] = {
            "pk": token_id,
            "sk": "token",
            "id": token_id,
            "kind": kind.value,
            "subject_id": subject_id,
            "description": description,
            "created_at": clock.iso(now),
            "hash": hash_token(raw),
            "gsi1pk": f"{subject_id}#tokens",
            "gsi1sk": clock.iso(now) + token_id,
        }
        if organization:
            item["organization"] = organization
        if workspace_id:
            item["workspace_id"] = workspace_id
        if ttl_s is not None or expires_epoch is not None:
            item["expires_at"] = expires_epoch if expires_epoch is not None else int(now.timestamp()) + (ttl_s or 0)
            item["expires_at_iso"] = clock.iso(now.fromtimestamp(item["expires_at"], now.tzinfo))
        # The hash lookup carries the whole principal, so authenticating a request is one read.
        lookup: dict[str, Any] = {
            "pk": f"tokenhash#{item['hash']}",
            "sk": "lookup",
            "token_id": token_id,
            "version": 1,
        }
        lookup.update(
            {k: item[k] for k in ("kind", "subject_id", "organization", "workspace_id", "expires_at") if k in item}
        )

        def step() -> IssuedToken:  # the user changed between our read and the write: decide again
            ops: list[WriteOp] = [self._user_unchanged(subject_id, lookup)] if kind is PrincipalKind.USER else []
            self._table.transact([*ops, Put(item, if_absent=True), Put(lookup, if_absent=True)])
            return IssuedToken(_token(item), raw)

        return optimistic(step, attempts=ISSUE_ATTEMPTS, exhausted="the user changed while the token was issued; retry")

    def _user_unchanged(self, user_id: str, lookup: dict[str, Any]) -> Check:
        """Copy the user's name and flags into a new token's lookup; refuse a suspended user (a token minted while
        suspended would start working when they are unsuspended). The returned check makes the token's write fail
        if the user changed since this read, so a suspension between the two cannot be missed."""
        user_item = self._table.get(user_id, "user")
        if user_item is None:
            raise NotFound(f"user {user_id} not found")
        user = _user(user_item)
        if user.suspended:
            raise Conflict(f"user {user.username} is suspended: no token can be issued until they are unsuspended")
        lookup.update(username=user.username, site_admin=user.site_admin, suspended=False)
        return Check(user_id, "user", if_version=user_item.get("version"))

    def authenticate(self, raw: str) -> Principal:
        """The principal of a token a client presented (a bearer token, a sign-in), recording its use."""
        if not raw:
            raise Unauthenticated("missing bearer token")
        lookup = self._lookup(hash_token(raw))
        self._record_use(lookup)
        return self._principal(lookup)

    def authenticate_hash(self, token_hash: str) -> Principal:
        """The principal of the token with this SHA-256 hash, as it is now: one read of its lookup item (a web
        session's token, checked on each page: not a use of the token by a client)."""
        return self._principal(self._lookup(token_hash))

    def _lookup(self, token_hash: str) -> dict[str, Any]:
        lookup = self._table.get(f"tokenhash#{token_hash}", "lookup")
        if lookup is None or ("expires_at" in lookup and lookup["expires_at"] < clock.epoch()):
            raise Unauthenticated("invalid or expired token")
        return lookup

    def _record_use(self, lookup: dict[str, Any]) -> None:
        """Write the token's `last_used_at` (shown on the tokens page and the API's `last-used-at`) when it was not
        written in the last LAST_USED_EVERY_S: no write at all otherwise, so this stays one read per request. The
        write is conditional on the lookup read: a concurrent use, a revocation (the lookup is gone: never
        re-created) or a change of the user's flags (`refresh_lookups` bumps the version) wins, and this use is
        then simply not recorded. It is the authentication of the request, not a write of what it reads: a GET
        stays free of writes to the resources it reads."""
        now = clock.epoch()
        if now - float(lookup.get("last_used_epoch", 0)) < LAST_USED_EVERY_S:
            return
        version = lookup.get("version")
        if version is None:  # a lookup written before uses were recorded: recorded once it carries a version
            return
        when = clock.now_iso()
        try:
            used = {"last_used_epoch": int(now), "last_used_at": when, "version": version + 1}
            self._table.put({**lookup, **used}, if_version=version)
        except ConditionFailed:
            pass

    def _principal(self, lookup: dict[str, Any]) -> Principal:
        kind = PrincipalKind(lookup["kind"])
        if kind is PrincipalKind.USER and lookup.get("suspended"):
            raise Unauthenticated("this user is suspended")
        if kind is PrincipalKind.USER:
            return Principal(
                kind,
                lookup["subject_id"],
                lookup["username"],
                token_id=lookup["token_id"],
                site_admin=bool(lookup.get("site_admin")),
            )
        return Principal(
            kind,
            lookup["subject_id"],
            f"api-{kind.value}-{lookup['subject_id']}",
            token_id=lookup["token_id"],
            organization=lookup.get("organization"),
            workspace_id=lookup.get("workspace_id"),
        )

    def list_tokens(self, subject_id: str) -> list[Token]:
        """The subject's tokens, each with its last use (recorded on its lookup, the item authentication reads)."""
        items = self._table.query(f"{subject_id}#tokens", index="gsi1")
        lookups = self._table.batch_get([(f"tokenhash#{item['hash']}", "lookup") for item in items])
        used = {lookup["token_id"]: lookup.get("last_used_at") for lookup in lookups}
        return [_token({**item, "last_used_at": used.get(item["id"]) or item.get("last_used_at")}) for item in items]

    def get_token(self, token_id: str) -> Token:
        item = self._table.get(token_id, "token")
        if item is None:
            raise NotFound(f"authentication token {token_id} not found")
        lookup = self._table.get(f"tokenhash#{item['hash']}", "lookup") or {}
        return _token({**item, "last_used_at": lookup.get("last_used_at") or item.get("last_used_at")})

    def revoke_token(self, token_id: str) -> None:
        item = self._table.get(token_id, "token")
        if item is None:
            raise NotFound(f"authentication token {token_id} not found")
        self._table.transact(revocation(token_id, item["hash"]))

    def refresh_lookups(self, user: User) -> None:
        """Re-write the lookups of a user's tokens after a change of name, admin flag or suspension."""
        changes = {"username": user.username, "site_admin": user.site_admin, "suspended": user.suspended}
        for token in self._table.query(f"{user.id}#tokens", index="gsi1"):
            lookup = self._table.get(f"tokenhash#{token['hash']}", "lookup")
            if lookup is not None:  # a new version: a last-use write that read the old flags cannot restore them
                self._table.put({**lookup, **changes, "version": int(lookup.get("version", 0)) + 1})
