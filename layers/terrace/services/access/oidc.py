"""Sign-in to the web UI through an OpenID Connect issuer the operator configured (Cognito, Okta, Entra ID,
Google, Keycloak, Dex, ...): the authorization-code flow with PKCE, state and nonce, and a verified ID token.

The protocol is Authlib's OpenID Connect client, as its Flask and Django integrations build it (over requests; the
routes are plain `def`, so its blocking calls run in the thread pool): discovery, the authorization URL with a PKCE
S256 challenge, the token exchange, the JWKS (fetched once more for a key id it lacks) and the ID token's checks
(signature; iss, aud, azp, exp/iat/nbf with a minute's leeway, nonce, at_hash). Terrace adds: the discovery document
must name the configured issuer, only asymmetric algorithms are accepted, and any refusal is `Unauthenticated`.

A person is matched by (issuer, subject), never by e-mail or name, and gets a Terrace user on first sign-in. The
groups claim is recorded on that link at every sign-in, for team mapping.

A sign-in is bound to the browser that started it: `start` gives a random browser secret (the UI keeps it in a
short-lived HttpOnly cookie scoped to the callback) and the state row keeps its hash; `finish` refuses a callback
without it, so a callback URL of someone else's sign-in (an attacker's, to sign a victim in as the attacker; or a
leaked one of a victim's) signs nobody in. Such a refusal leaves the state unspent: the browser that did start
that sign-in can still finish it.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from terrace.domain import clock
from terrace.domain.errors import Conflict, NotFound, Unauthenticated
from terrace.domain.users import User
from terrace.domain.web_sessions import WebSession
from terrace.services.access.accounts import AccountService
from terrace.services.access.store_sign_in import SignInStore
from terrace.services.access.web_sessions import WebSessionService
from terrace.services.optimistic import optimistic

STATE_TTL_S = 600
CALLBACK_PATH = "/app/sign-in/oidc/callback"
LINK_ATTEMPTS = 5  # a sign-in whose link write loses looks again; only a storm of sign-ins of one person loses 5 times


@dataclass(frozen=True)
class OidcConfig:
    issuer: str
    client_id: str
    client_secret: str
    redirect_uri: str
    groups_claim: str = "groups"


class NotThisBrowser(Unauthenticated):
    """A callback whose browser did not start this sign-in (no binding cookie, or another sign-in's)."""


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


def _username_base(claims: dict[str, Any]) -> str:
    wanted = str(claims.get("preferred_username") or str(claims.get("email", "")).split("@")[0] or claims["sub"])
    return re.sub(r"[^A-Za-z0-9_-]+", "-", wanted).strip("-")[:40] or "user"


class OidcSignIn:
    def __init__(
        self,
        store: SignInStore,
        accounts: AccountService,
        sessions: WebSessionService,
        config: OidcConfig,
        on_groups: Callable[[str, list[str]], object] | None = None,
    ) -> None:
        self._on_groups = on_groups  # team mapping (services/access/sso_teams.py), after each sign-in
        self._store = store
        self._accounts = accounts
        self._sessions = sessions
        self.config = config
        # Authlib, joserfc and requests are loaded when single sign-on is configured, not on every cold start
        from terrace.services.access.oidc_issuer import Issuer, refusals

        self._issuer = Issuer(config)
        self._refusals = refusals

    # the flow -------------------------------------------------------------------------------
    def start(self, next_page: str) -> tuple[str, str]:
        """Where to send the browser to sign in, and the browser secret it must bring back to the callback;
        remembers state, nonce, PKCE verifier and the secret's hash for `STATE_TTL_S`."""
        state, nonce, verifier, browser = (secrets.token_urlsafe(32) for _ in range(4))
        with self._refusals():  # an unreachable issuer writes no state
            target = self._issuer.create_authorization_url(
                self.config.redirect_uri, state=state, nonce=nonce, code_verifier=verifier
            )["url"]
        self._store.put_oidc_state(
            state,
            {
                "nonce": nonce,
                "verifier": verifier,
                "browser": _digest(browser),
                "next": next_page,
                "expires_at": int(clock.epoch()) + STATE_TTL_S,
            },
        )
        return str(target), browser

    def finish(self, params: dict[str, str], browser: str | None) -> tuple[str, WebSession, str]:
        """The issuer sent the browser back: returns the session cookie, the session and the page to show.
        `browser` is the secret `start` gave the browser that began this sign-in (NotThisBrowser without it)."""
        state = params.get("state", "")
        remembered = self._store.oidc_state(state)
        if remembered is None or int(remembered["expires_at"]) <= clock.epoch():
            raise Unauthenticated("this sign-in has expired or was already used; start again")
        if not browser:
            raise NotThisBrowser("this sign-in was not started in this browser, or took too long; start again")
        if not hmac.compare_digest(_digest(browser).encode(), str(remembered.get("browser", "")).encode()):
            # left unspent: the browser that started it may still come back with it
            raise NotThisBrowser("this sign-in was started in another browser or tab; start again")
        if not self._store.spend_oidc_state(state):  # single use: spent before anything else is decided
            raise Unauthenticated("this sign-in has expired or was already used; start again")
        if params.get("error"):
            raise Unauthenticated(f"the identity provider refused the sign-in: {params['error']}")
        with self._refusals():
            tokens = self._issuer.fetch_access_token(
                self.config.redirect_uri, code=params.get("code", ""), code_verifier=remembered["verifier"]
            )
        claims = self._verified(tokens.get("id_token", ""), remembered["nonce"], tokens.get("access_token"))
        user_id = self._user_for(claims)
        cookie, session = self._sessions.sign_in_federated(user_id, self.config.issuer)
        return cookie, session, str(remembered["next"])

    def _verified(self, id_token: str, nonce: str, access_token: str | None = None) -> dict[str, Any]:
        """The ID token's claims once Authlib has checked them (iss and aud essential) and its signature."""
        if not id_token:
            raise Unauthenticated("the identity provider answered without an ID token")
        token = {"id_token": id_token} | ({"access_token": access_token} if access_token else {})
        with self._refusals():
            issuer = self._issuer.load_server_metadata()["issuer"]
            options = {"iss": {"essential": True, "values": [issuer]}, "sub": {"essential": True},
                       "aud": {"essential": True, "values": [self.config.client_id]}}  # fmt: skip
            claims = self._issuer.verify_id_token(token, nonce, options)
        return dict(claims)

    def _user_for(self, claims: dict[str, Any]) -> str:
        """The Terrace user linked to (issuer, subject), created on first sign-in; records the groups claim."""
        groups = claims.get(self.config.groups_claim) or []
        groups = [str(g) for g in groups][:100] if isinstance(groups, list) else [str(groups)]
        user_id = optimistic(
            lambda: self._linked_user(claims, groups),
            attempts=LINK_ATTEMPTS,
            exhausted="this person is signing in elsewhere at the same moment; try again",
        )
        if self._on_groups is not None:
            self._on_groups(user_id, groups)
        return user_id

    def _linked_user(self, claims: dict[str, Any], groups: list[str]) -> str:
        """One attempt: the link is written conditionally (absent for a first link, its version otherwise), so of
        two sign-ins of one person that race, one link wins; the loser deletes the user it has just created and
        lets ConditionFailed through (look again). A link whose user was deleted is replaced the same way: the
        person starts over."""
        subject = str(claims["sub"])
        link = self._store.oidc_link(self.config.issuer, subject)
        created: User | None = None
        if link is not None and self._user_exists(link["user_id"]):
            user_id = str(link["user_id"])
        else:
            created = self._create_user(claims)
            user_id = created.id
        record = {"user_id": user_id, "subject": claims["sub"], "groups": groups, "signed_in_at": clock.now_iso()}
        undo = partial(self._accounts.discard_new_user, created) if created is not None else None
        self._store.put_oidc_link(self.config.issuer, subject, record, link, lost=undo)
        return user_id

    def _user_exists(self, user_id: str) -> bool:
        try:
            self._accounts.get_user(user_id)
        except NotFound:
            return False
        return True

    def _create_user(self, claims: dict[str, Any]) -> User:
        base = _username_base(claims)
        email = str(claims.get("email", "")) if claims.get("email_verified", True) else ""
        for attempt in range(20):
            username = base if attempt == 0 else f"{base}-{secrets.token_hex(2)}"
            try:
                return self._accounts.create_user(username, email)
            except Conflict:
                continue
        raise Conflict("could not find a free username for this person; ask an administrator")
