"""Sign-in to the web UI through an OpenID Connect issuer the operator configured (Cognito, Okta, Entra ID,
Google, Keycloak, Dex, ...): the authorization-code flow with PKCE, state and nonce, and a verified ID token.

A person is matched by (issuer, subject), never by e-mail or name, and gets a Terrace user on first sign-in. The
groups claim is recorded on that link at every sign-in, for team mapping.

A sign-in is bound to the browser that started it: `start` gives a random browser secret (the UI keeps it in a
short-lived HttpOnly cookie scoped to the callback) and the state row keeps its hash; `finish` refuses a callback
without it, so a callback URL of someone else's sign-in (an attacker's, to sign a victim in as the attacker; or a
leaked one of a victim's) signs nobody in. Such a refusal leaves the state unspent: the browser that did start
that sign-in can still finish it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import httpx
import jwt

from terrace.adapters.table import ConditionFailed, Table
from terrace.domain import clock
from terrace.domain.errors import Conflict, NotFound, Unauthenticated
from terrace.services.access.accounts import AccountService, User
from terrace.services.access.web_sessions import WebSession, WebSessionService

STATE_TTL_S = 600
CALLBACK_PATH = "/app/sign-in/oidc/callback"
LINK_ATTEMPTS = 5  # a sign-in whose link write loses looks again; only a storm of sign-ins of one person loses 5 times
ALGORITHMS = ["RS256", "RS384", "RS512", "ES256", "ES384", "PS256"]


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


def _state_key(state: str) -> tuple[str, str]:
    return f"oidcstate#{hashlib.sha256(state.encode()).hexdigest()}", "state"


def _link_key(issuer: str, subject: str) -> tuple[str, str]:
    return f"oidcsub#{hashlib.sha256(f'{issuer} {subject}'.encode()).hexdigest()}", "link"


def _username_base(claims: dict[str, Any]) -> str:
    wanted = str(claims.get("preferred_username") or str(claims.get("email", "")).split("@")[0] or claims["sub"])
    return re.sub(r"[^A-Za-z0-9_-]+", "-", wanted).strip("-")[:40] or "user"


class OidcSignIn:
    def __init__(
        self,
        table: Table,
        accounts: AccountService,
        sessions: WebSessionService,
        config: OidcConfig,
        on_groups: Callable[[str, list[str]], object] | None = None,
    ) -> None:
        self._on_groups = on_groups  # team mapping (services/access/sso_teams.py), after each sign-in
        self._table = table
        self._accounts = accounts
        self._sessions = sessions
        self.config = config
        self._metadata: dict[str, Any] | None = None
        self._jwks: jwt.PyJWKSet | None = None

    # the issuer ---------------------------------------------------------------------------
    def _http(self, method: str, url: str, **kwargs: Any) -> dict[str, Any]:
        try:
            response = httpx.request(method, url, timeout=10, **kwargs)
        except httpx.HTTPError as exc:
            raise Unauthenticated(f"the identity provider could not be reached: {exc}") from exc
        if response.status_code != 200:
            raise Unauthenticated(f"the identity provider answered {response.status_code} at {url}")
        body: dict[str, Any] = response.json()
        return body

    def metadata(self) -> dict[str, Any]:
        if self._metadata is None:
            meta = self._http("GET", f"{self.config.issuer}/.well-known/openid-configuration")
            if meta.get("issuer", "").rstrip("/") != self.config.issuer:
                raise Unauthenticated("the identity provider's metadata names another issuer")
            self._metadata = meta
        return self._metadata

    def _signing_key(self, token: str) -> Any:
        kid = jwt.get_unverified_header(token).get("kid")
        for refresh in (False, True):  # a key we do not know yet: the issuer may have rotated its keys
            if self._jwks is None or refresh:
                self._jwks = jwt.PyJWKSet.from_dict(self._http("GET", self.metadata()["jwks_uri"]))
            for key in self._jwks.keys:
                if kid is None or key.key_id == kid:
                    return key.key
        raise Unauthenticated("the ID token is signed with a key the identity provider does not publish")

    # the flow -------------------------------------------------------------------------------
    def start(self, next_page: str) -> tuple[str, str]:
        """Where to send the browser to sign in, and the browser secret it must bring back to the callback;
        remembers state, nonce, PKCE verifier and the secret's hash for `STATE_TTL_S`."""
        endpoint = self.metadata()["authorization_endpoint"]  # an unreachable issuer writes no state
        state, nonce, verifier, browser = (secrets.token_urlsafe(32) for _ in range(4))
        self._table.put(
            {
                "pk": _state_key(state)[0],
                "sk": "state",
                "nonce": nonce,
                "verifier": verifier,
                "browser": _digest(browser),
                "next": next_page,
                "expires_at": int(clock.epoch()) + STATE_TTL_S,
                "version": 1,
            },
            if_absent=True,
        )
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        query = {
            "response_type": "code",
            "client_id": self.config.client_id,
            "redirect_uri": self.config.redirect_uri,
            "scope": "openid profile email",
            "state": state,
            "nonce": nonce,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
        return f"{endpoint}?{urlencode(query)}", browser

    def finish(self, params: dict[str, str], browser: str | None) -> tuple[str, WebSession, str]:
        """The issuer sent the browser back: returns the session cookie, the session and the page to show.
        `browser` is the secret `start` gave the browser that began this sign-in (NotThisBrowser without it)."""
        key = _state_key(params.get("state", ""))
        remembered = self._table.get(*key)
        if remembered is None or int(remembered["expires_at"]) <= clock.epoch():
            raise Unauthenticated("this sign-in has expired or was already used; start again")
        if not browser:
            raise NotThisBrowser("this sign-in was not started in this browser, or took too long; start again")
        if not hmac.compare_digest(_digest(browser).encode(), str(remembered.get("browser", "")).encode()):
            # left unspent: the browser that started it may still come back with it
            raise NotThisBrowser("this sign-in was started in another browser or tab; start again")
        try:  # single use: spent before anything else is decided
            self._table.delete(*key, if_version=1)
        except ConditionFailed as exc:
            raise Unauthenticated("this sign-in has expired or was already used; start again") from exc
        if params.get("error"):
            raise Unauthenticated(f"the identity provider refused the sign-in: {params['error']}")
        tokens = self._http(
            "POST",
            self.metadata()["token_endpoint"],
            data={
                "grant_type": "authorization_code",
                "code": params.get("code", ""),
                "redirect_uri": self.config.redirect_uri,
                "code_verifier": remembered["verifier"],
            },
            auth=(self.config.client_id, self.config.client_secret),
        )
        claims = self._verified(tokens.get("id_token", ""), remembered["nonce"])
        user_id = self._user_for(claims)
        cookie, session = self._sessions.sign_in_federated(user_id, self.config.issuer)
        return cookie, session, str(remembered["next"])

    def _verified(self, id_token: str, nonce: str) -> dict[str, Any]:
        try:
            claims: dict[str, Any] = jwt.decode(
                id_token,
                self._signing_key(id_token),
                algorithms=ALGORITHMS,
                audience=self.config.client_id,
                issuer=self.metadata()["issuer"],
                options={"require": ["exp", "iat", "iss", "aud", "sub"]},
                leeway=60,
            )
        except jwt.PyJWTError as exc:
            raise Unauthenticated(f"the ID token was refused: {exc}") from exc
        if claims.get("nonce") != nonce:
            raise Unauthenticated("the ID token was refused: its nonce is not this sign-in's")
        return claims

    def _user_for(self, claims: dict[str, Any]) -> str:
        """The Terrace user linked to (issuer, subject), created on first sign-in; records the groups claim."""
        groups = claims.get(self.config.groups_claim) or []
        groups = [str(g) for g in groups][:100] if isinstance(groups, list) else [str(groups)]
        for _ in range(LINK_ATTEMPTS):
            user_id = self._linked_user(claims, groups)
            if user_id is not None:
                if self._on_groups is not None:
                    self._on_groups(user_id, groups)
                return user_id
        raise Conflict("this person is signing in elsewhere at the same moment; try again")

    def _linked_user(self, claims: dict[str, Any], groups: list[str]) -> str | None:
        """One attempt: the link is written conditionally (absent for a first link, its version otherwise), so of
        two sign-ins of one person that race, one link wins; the loser deletes the user it has just created and
        answers None (look again). A link whose user was deleted is replaced the same way: the person starts over."""
        key = _link_key(self.config.issuer, str(claims["sub"]))
        link = self._table.get(*key)
        created: User | None = None
        if link is not None and self._user_exists(link["user_id"]):
            user_id = str(link["user_id"])
        else:
            created = self._create_user(claims)
            user_id = created.id
        item = {
            "pk": key[0],
            "sk": "link",
            "user_id": user_id,
            "issuer": self.config.issuer,
            "subject": claims["sub"],
            "groups": groups,
            "signed_in_at": clock.now_iso(),
            "version": (link or {}).get("version", 0) + 1,
        }
        try:  # a link from before links had versions is replaced unconditionally, once
            self._table.put(item, if_absent=link is None, if_version=None if link is None else link.get("version"))
        except ConditionFailed:
            if created is not None:
                self._accounts.discard_new_user(created)
            return None
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
