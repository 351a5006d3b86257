"""Users and their API tokens. Tokens are random secrets stored only as SHA-256 hashes."""

from __future__ import annotations

import hashlib
import secrets

from terrace.domain import clock
from terrace.domain.errors import NotFound, Unauthenticated
from terrace.domain.ids import new_id
from terrace.domain.principal import Principal, PrincipalKind
from terrace.domain.tokens import IssuedToken, Token
from terrace.domain.users import User, check_username
from terrace.services.access.store_accounts import AccountStore
from terrace.services.access.store_token_items import TokenLookup
from terrace.services.access.store_token_items import revocation as revocation
from terrace.services.optimistic import optimistic

TOKEN_PREFIX = "terrace"
ISSUE_ATTEMPTS = 3
# A token's last use is recorded at most once per this many seconds: a busy token (a runner's heartbeat, a CI
# loop) costs one conditional write per period, not one per request.
LAST_USED_EVERY_S = 300


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def new_secret() -> str:
    return f"{secrets.token_hex(7)}.{TOKEN_PREFIX}.{secrets.token_urlsafe(40)}"


class AccountService:
    def __init__(self, store: AccountStore) -> None:
        self._store = store

    # users -------------------------------------------------------------------------------
    def create_user(self, username: str, email: str = "", *, site_admin: bool = False) -> User:
        check_username(username)
        user = User(new_id("user"), username, email, site_admin, clock.now_iso())
        self._store.create_user(user)
        if email:  # an address its creator vouched for (an operator, a verified single sign-on claim): an
            self._store.claim_email_if_free(email.lower(), user.id)  # invitation to it invites this account
        return user

    def discard_new_user(self, user: User) -> None:
        """Undo `create_user` for a user nothing refers to yet (a first sign-in that lost a race): the user and
        its name claim, only while the user is unchanged since its creation."""
        self._store.discard_new_user(user)

    def get_user(self, user_id: str) -> User:
        user = self._store.user(user_id)
        if user is None:
            raise NotFound(f"user {user_id} not found")
        return user

    def get_users(self, user_ids: list[str]) -> list[User]:
        return self._store.users(user_ids)

    def find_user(self, username: str) -> User | None:
        user_id = self.user_id_of(username)
        return self.get_user(user_id) if user_id else None

    def user_id_of(self, username: str) -> str | None:
        """The id of the user named `username` (one read: its name claim), or None."""
        return self._store.user_id_of(username)

    def user_id_by_email(self, address: str) -> str | None:
        """The account `address` is claimed by (the account created with it, or an invitation made for it), or None."""
        return self._store.user_id_by_email(address)

    def claim_email(self, address: str, user_id: str) -> None:
        """Remember the account an e-mail invitation made for `address` (the next invitation finds it)."""
        self._store.claim_email(address, user_id)

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
        created_by: tuple[str, str] | None = None,  # (JSON:API type, id) of its creator (`tokens.creator_of`)
    ) -> IssuedToken:
        raw = secret or new_secret()
        token_id = token_id or new_id("at")
        now = clock.utcnow()
        expires_iso = None
        if ttl_s is not None or expires_epoch is not None:
            expires_epoch = expires_epoch if expires_epoch is not None else int(now.timestamp()) + (ttl_s or 0)
            expires_iso = clock.iso(now.fromtimestamp(expires_epoch, now.tzinfo))
        token = Token(token_id, kind, subject_id, description, clock.iso(now), None, expires_iso,
                      organization or None, workspace_id or None, created_by=created_by)  # fmt: skip

        def step() -> IssuedToken:  # the user changed between our read and the write: decide again
            self._store.add_token(token, hash_token(raw), expires_epoch)
            return IssuedToken(token, raw)

        return optimistic(step, attempts=ISSUE_ATTEMPTS, exhausted="the user changed while the token was issued; retry")

    def authenticate(self, raw: str) -> Principal:
        """The principal of a token a client presented (a bearer token, a sign-in), recording its use."""
        if not raw:
            raise Unauthenticated("missing bearer token")
        lookup = self._lookup(hash_token(raw))
        principal = lookup.principal()
        if principal.kind is PrincipalKind.SCIM:  # a SCIM token provisions through /scim/v2 and nothing else
            raise Unauthenticated("invalid or expired token")
        self._record_use(lookup)
        return principal

    def authenticate_scim(self, raw: str) -> Principal:
        """The principal of a SCIM token (`/scim/v2`); any other token is refused there."""
        lookup = self._lookup(hash_token(raw)) if raw else None
        if lookup is None or lookup.principal().kind is not PrincipalKind.SCIM:
            raise Unauthenticated("a SCIM token is required")
        self._record_use(lookup)
        return lookup.principal()

    def authenticate_hash(self, token_hash: str) -> Principal:
        """The principal of the token with this SHA-256 hash, as it is now: one read of its lookup item (a web
        session's token, checked on each page: not a use of the token by a client)."""
        principal = self._lookup(token_hash).principal()
        if principal.kind is PrincipalKind.SCIM:
            raise Unauthenticated("invalid or expired token")
        return principal

    def _lookup(self, token_hash: str) -> TokenLookup:
        lookup = self._store.lookup(token_hash)
        if lookup is None or (lookup.expires_at is not None and lookup.expires_at < clock.epoch()):
            raise Unauthenticated("invalid or expired token")
        return lookup

    def _record_use(self, lookup: TokenLookup) -> None:
        """Write the token's `last_used_at` (shown on the tokens page and the API's `last-used-at`) when it was not
        written in the last LAST_USED_EVERY_S: no write at all otherwise, so this stays one read per request. The
        write is conditional on the lookup read: a concurrent use, a revocation (the lookup is gone: never
        re-created) or a change of the user's flags (`refresh_lookups` bumps the version) wins, and this use is
        then simply not recorded. It is the authentication of the request, not a write of what it reads: a GET
        stays free of writes to the resources it reads."""
        now = clock.epoch()
        if now - lookup.last_used_epoch < LAST_USED_EVERY_S:
            return
        if lookup.version is None:  # a lookup written before uses were recorded: recorded once it carries a version
            return
        self._store.record_use(lookup, int(now), clock.now_iso())

    def list_tokens(self, subject_id: str) -> list[Token]:
        """The subject's tokens, each with its last use (recorded on its lookup, the item authentication reads)."""
        return self._store.tokens_of(subject_id)

    def get_token(self, token_id: str) -> Token:
        return self._store.token(token_id)

    def revoke_token(self, token_id: str) -> None:
        self._store.revoke(token_id)

    def refresh_lookups(self, user: User) -> None:
        """Re-write the lookups of a user's tokens after a change of name, admin flag or suspension."""
        self._store.refresh_lookups(user)
