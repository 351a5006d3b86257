"""Browser sessions for the web UI: a server-side record per sign-in, with an expiry and a CSRF token.

The cookie carries only the random session id, signed (itsdangerous, HMAC-SHA256 under the URL-signing secret
with the purpose `SALT`, so no other signature of that secret passes for a cookie); the record holds the principal
and the CSRF token, so sign-out (deleting the record) and expiry are real.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from typing import Any

from itsdangerous import BadSignature, Signer

from terrace.adapters.table import Table
from terrace.domain import clock
from terrace.domain.errors import Invalid, Unauthenticated
from terrace.domain.principal import Principal, PrincipalKind
from terrace.services.access.accounts import AccountService

SALT = "terrace.web-session"  # the purpose of the signature: a session cookie


@dataclass(frozen=True)
class WebSession:
    id: str
    principal: Principal
    csrf_token: str
    expires_at: int


def _key(session_id: str) -> tuple[str, str]:
    return f"websession#{hashlib.sha256(session_id.encode()).hexdigest()}", "session"


class WebSessionService:
    def __init__(self, table: Table, accounts: AccountService, signing_secret: str, ttl_s: int = 8 * 3600) -> None:
        if not signing_secret:
            raise Invalid("web sessions need a signing secret (TERRACE_URL_SIGNING_SECRET)")
        self._table = table
        self._accounts = accounts
        self._signer = Signer(signing_secret, salt=SALT, digest_method=hashlib.sha256)
        self._ttl_s = ttl_s

    def sign_in(self, raw_token: str) -> tuple[str, WebSession]:
        """Authenticate an API token; returns the cookie value and the session. Only user tokens sign in."""
        principal = self._accounts.authenticate(raw_token.strip())
        if principal.kind is not PrincipalKind.USER:
            raise Unauthenticated("only a user API token can sign in to the web UI")
        return self._start(principal, token_id=principal.token_id)

    def sign_in_federated(self, user_id: str, issuer: str) -> tuple[str, WebSession]:
        """A session for a user an identity provider vouched for (OIDC): alive while the user exists, unsuspended."""
        user = self._accounts.get_user(user_id)
        if user.suspended:
            raise Unauthenticated("this user is suspended; ask a site administrator")
        principal = Principal(PrincipalKind.USER, user.id, user.username, site_admin=user.site_admin)
        return self._start(principal, issuer=issuer)

    def _start(self, principal: Principal, *, token_id: str | None = None, issuer: str = "") -> tuple[str, WebSession]:
        session_id = secrets.token_urlsafe(32)
        expires_at = int(clock.epoch()) + self._ttl_s
        item: dict[str, Any] = {
            "pk": _key(session_id)[0],
            "sk": "session",
            "subject_id": principal.subject_id,
            "username": principal.username,
            "site_admin": principal.site_admin,
            "csrf": secrets.token_urlsafe(32),
            "expires_at": expires_at,
        }
        if token_id:
            item["token_id"] = token_id
        if issuer:
            item["issuer"] = issuer
        self._table.put(item, if_absent=True)
        return self._signer.sign(session_id).decode(), self._session(session_id, item)

    def resolve(self, cookie: str | None) -> WebSession | None:
        """The live session a cookie names, or None when it is missing, forged, signed out or expired, or
        when the API token it signed in with has been revoked or has expired since."""
        try:  # bytes compared, whatever the cookie holds (non-ASCII included)
            session_id = self._signer.unsign(cookie or "").decode()
        except (BadSignature, UnicodeError):
            return None
        if not session_id:
            return None
        item = self._table.get(*_key(session_id))
        if item is None or int(item["expires_at"]) <= clock.epoch():
            return None
        if not self._still_vouched_for(item):
            self._table.delete(*_key(session_id))  # its token was revoked or expired, or its user is gone
            return None
        return self._session(session_id, item)

    def _still_vouched_for(self, item: dict[str, Any]) -> bool:
        if item.get("token_id"):
            return self._accounts.token_is_live(item["token_id"])
        if item.get("issuer"):
            return self._accounts.user_is_active(item["subject_id"])
        return False

    def sign_out(self, session: WebSession) -> None:
        self._table.delete(*_key(session.id))

    @staticmethod
    def _session(session_id: str, item: dict[str, Any]) -> WebSession:
        principal = Principal(
            PrincipalKind.USER,
            item["subject_id"],
            item["username"],
            token_id=item.get("token_id"),
            site_admin=bool(item.get("site_admin")),
        )
        return WebSession(session_id, principal, item["csrf"], int(item["expires_at"]))
