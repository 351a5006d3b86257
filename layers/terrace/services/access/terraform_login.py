"""`terraform login` / `tofu login`: the OAuth 2 authorization-code grant with PKCE of the `login.v1` service.

The CLI opens `/app/oauth/authorize` in a browser with a PKCE challenge and a redirect to a listener of its own
on localhost; a signed-in user approves there (`approve`), which stores a single-use code bound to that user, the
challenge and the redirect URI for ten minutes; the CLI then trades the code and its verifier for a new user API
token at `/oauth/token` (`exchange`). A code works once, only with its verifier and its redirect URI.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from urllib.parse import urlencode

from terrace.domain import clock
from terrace.domain.errors import Conflict, Invalid, NotFound, TerraceError
from terrace.domain.principal import Principal, PrincipalKind
from terrace.domain.terraform_login import LoginRequest
from terrace.domain.tokens import IssuedToken
from terrace.services.access.accounts import AccountService
from terrace.services.access.store_sign_in import SignInStore

CLIENT_ID = "terraform-cli"
PORTS = (10000, 10010)  # the listener ports the CLI may use (advertised in discovery)
CODE_TTL_S = 600
LOGIN_SERVICE = {
    "client": CLIENT_ID,
    "grant_types": ["authz_code"],
    "authz": "/app/oauth/authorize",
    "token": "/oauth/token",
    "ports": list(PORTS),
}


class OAuthError(TerraceError):
    """A token request the OAuth 2 protocol refuses; `code` is its RFC 6749 error code."""

    title = "invalid request"

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code


def _s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


# exactly what the CLIs send (`http://localhost:%d/login`): no userinfo, query, fragment, backslash or control
# character that a browser or the CLI might read differently from this check
_REDIRECT = re.compile(r"http://(?:localhost|127\.0\.0\.1):([0-9]{5})/login")
_CHALLENGE = re.compile(r"[A-Za-z0-9_-]{43}")  # BASE64URL(SHA-256(verifier)), unpadded (RFC 7636 4.2)
_VERIFIER = re.compile(r"[A-Za-z0-9._~-]{43,128}")  # RFC 7636 4.1


def _redirect_ok(uri: str) -> bool:
    match = _REDIRECT.fullmatch(uri)
    return match is not None and PORTS[0] <= int(match.group(1)) <= PORTS[1]


class TerraformLoginService:
    def __init__(self, store: SignInStore, accounts: AccountService) -> None:
        self._store = store
        self._accounts = accounts

    def check_request(self, params: dict[str, str]) -> LoginRequest:
        """The authorization request's parameters, or Invalid naming the first one that is wrong."""
        if params.get("client_id") != CLIENT_ID:
            raise Invalid(f"unknown client_id; this server signs in the client '{CLIENT_ID}'", pointer="client_id")
        if params.get("response_type") != "code":
            raise Invalid("response_type must be 'code'", pointer="response_type")
        if not _redirect_ok(params.get("redirect_uri", "")):
            raise Invalid(
                f"redirect_uri must be http://localhost:<port>/login with a port in {PORTS[0]}-{PORTS[1]}",
                pointer="redirect_uri",
            )
        if params.get("code_challenge_method") != "S256" or not _CHALLENGE.fullmatch(params.get("code_challenge", "")):
            raise Invalid("a PKCE code_challenge with method S256 is required", pointer="code_challenge")
        state = params.get("state", "")
        if not state or len(state) > 512:
            raise Invalid("state is required (at most 512 characters)", pointer="state")
        return LoginRequest(params["redirect_uri"], state, params["code_challenge"])

    def approve(self, principal: Principal, request: LoginRequest) -> str:
        """The signed-in user approved: a single-use code for them; returns where to send the browser."""
        if principal.kind is not PrincipalKind.USER:
            raise Invalid("only a signed-in user can approve a login")
        code = secrets.token_urlsafe(32)
        self._store.put_login_code(
            code,
            {
                "user_id": principal.subject_id,
                "challenge": request.code_challenge,
                "redirect_uri": request.redirect_uri,
                "expires_at": int(clock.epoch()) + CODE_TTL_S,  # the table's TTL attribute
            },
        )
        return f"{request.redirect_uri}?{urlencode({'code': code, 'state': request.state})}"

    @staticmethod
    def deny(request: LoginRequest) -> str:
        error = {"error": "access_denied", "error_description": "the user declined", "state": request.state}
        return f"{request.redirect_uri}?{urlencode(error)}"

    def exchange(self, form: dict[str, str]) -> IssuedToken:
        """Trade a code and its PKCE verifier for a new user API token; the code is spent either way."""
        if form.get("grant_type") != "authorization_code":
            raise OAuthError("unsupported_grant_type", "grant_type must be authorization_code")
        if form.get("client_id", CLIENT_ID) != CLIENT_ID:
            raise OAuthError("invalid_client", f"unknown client_id; expected '{CLIENT_ID}'")
        code, verifier, redirect_uri = form.get("code", ""), form.get("code_verifier", ""), form.get("redirect_uri", "")
        if not code or not verifier or not redirect_uri:
            raise OAuthError("invalid_request", "code, code_verifier and redirect_uri are required")
        if not _VERIFIER.fullmatch(verifier):
            raise OAuthError("invalid_request", "code_verifier must be 43 to 128 of A-Z a-z 0-9 - . _ ~ (RFC 7636)")
        item = self._store.spend_login_code(code)  # spent first: two exchanges of one code never both win
        if item is None or int(item["expires_at"]) <= clock.epoch():
            raise OAuthError("invalid_grant", "the authorization code is unknown, used or expired")
        if not hmac.compare_digest(_s256(verifier).encode(), str(item["challenge"]).encode()):
            raise OAuthError("invalid_grant", "the code_verifier does not match the code_challenge")
        if redirect_uri != item["redirect_uri"]:
            raise OAuthError("invalid_grant", "redirect_uri differs from the authorization request's")
        stamp = clock.iso(clock.utcnow())[:16].replace("T", " ")
        try:  # the user may have been suspended or deleted since they approved
            return self._accounts.issue_token(
                PrincipalKind.USER, item["user_id"], description=f"terraform login ({stamp} UTC)"
            )
        except (Conflict, NotFound) as exc:
            raise OAuthError("invalid_grant", exc.detail) from exc
