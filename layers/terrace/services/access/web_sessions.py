"""Browser sessions for the web UI: a server-side record per sign-in, with an expiry and a CSRF token.

The cookie carries only the random session id, signed (itsdangerous, HMAC-SHA256 under the URL-signing secret
with the purpose `SALT`, so no other signature of that secret passes for a cookie); the record holds who signed in
and the CSRF token, so sign-out (deleting the record) and expiry are real. The user's name, site-admin right and
suspension are re-read on every request (a token session: its token's lookup item; a single sign-on session: the
user item), never kept from the sign-in. A user's sessions are listed together (`store_sign_in.py`), so a
suspension, a revoked site-admin right or a deletion deletes them all (`SignInStore.end_sessions`).
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from itsdangerous import BadSignature, Signer

from terrace.domain import clock
from terrace.domain.errors import Invalid, NotFound, Unauthenticated
from terrace.domain.principal import Principal, PrincipalKind
from terrace.domain.web_sessions import WebSession
from terrace.services.access.accounts import AccountService, hash_token
from terrace.services.access.store_sign_in import SignInStore

SALT = "terrace.web-session"  # the purpose of the signature: a session cookie


class WebSessionService:
    def __init__(
        self, store: SignInStore, accounts: AccountService, signing_secret: str, ttl_s: int = 8 * 3600
    ) -> None:
        if not signing_secret:
            raise Invalid("web sessions need a signing secret (TERRACE_URL_SIGNING_SECRET)")
        self._store = store
        self._accounts = accounts
        self._signer = Signer(signing_secret, salt=SALT, digest_method=hashlib.sha256)
        self._ttl_s = ttl_s

    def sign_in(self, raw_token: str) -> tuple[str, WebSession]:
        """Authenticate an API token; returns the cookie value and the session. Only user tokens sign in."""
        token_hash = hash_token(raw_token.strip())
        principal = self._accounts.authenticate(raw_token.strip())
        if principal.kind is not PrincipalKind.USER:
            raise Unauthenticated("only a user API token can sign in to the web UI")
        return self._start(principal, token_hash=token_hash)

    def sign_in_federated(self, user_id: str, issuer: str) -> tuple[str, WebSession]:
        """A session for a user an identity provider vouched for (OIDC): alive while the user exists, unsuspended."""
        user = self._accounts.get_user(user_id)
        if user.suspended:
            raise Unauthenticated("this user is suspended; ask a site administrator")
        principal = Principal(
            PrincipalKind.USER, user.id, user.username, site_admin=user.site_admin, site_auditor=user.site_auditor
        )
        return self._start(principal, issuer=issuer)

    def _start(self, principal: Principal, *, token_hash: str = "", issuer: str = "") -> tuple[str, WebSession]:
        session_id = secrets.token_urlsafe(32)
        expires_at = int(clock.epoch()) + self._ttl_s
        record: dict[str, Any] = {"subject_id": principal.subject_id, "csrf": secrets.token_urlsafe(32),
                                  "expires_at": expires_at}  # fmt: skip
        if token_hash:
            record.update(token_id=principal.token_id, token_hash=token_hash)
        if issuer:
            record["issuer"] = issuer
        self._store.start_session(session_id, record)
        return self._signer.sign(session_id).decode(), WebSession(session_id, principal, record["csrf"], expires_at)

    def resolve(self, cookie: str | None) -> WebSession | None:
        """The live session a cookie names, with its user as they are now; None when the cookie is missing or
        forged, the session signed out or expired, its token revoked or expired, or its user suspended or gone."""
        try:  # bytes compared, whatever the cookie holds (non-ASCII included)
            session_id = self._signer.unsign(cookie or "").decode()
        except (BadSignature, UnicodeError):
            return None
        if not session_id:
            return None
        item = self._store.session(session_id)
        if item is None or int(item["expires_at"]) <= clock.epoch():
            return None
        principal = self._current(item)
        if principal is None:  # nobody vouches for it any more; a read leaves the item to its expiry
            return None
        return WebSession(session_id, principal, item["csrf"], int(item["expires_at"]))

    def _current(self, item: dict[str, Any]) -> Principal | None:
        """Who the session acts as now (one read), or None when that is nobody. A session from before sessions
        kept their token's hash has nothing to re-read: it ends."""
        if item.get("token_hash"):
            try:  # the token's lookup item: gone when revoked; it carries expiry, suspension and site admin
                principal = self._accounts.authenticate_hash(item["token_hash"])
            except Unauthenticated:
                return None
            return principal if principal.token_id == item.get("token_id") else None
        if item.get("issuer"):
            try:
                user = self._accounts.get_user(item["subject_id"])
            except NotFound:
                return None
            if user.suspended:
                return None
            return Principal(
                PrincipalKind.USER, user.id, user.username, site_admin=user.site_admin, site_auditor=user.site_auditor
            )
        return None

    def sign_out(self, session: WebSession) -> None:
        self._store.end_session(session.id)
