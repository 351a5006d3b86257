"""The OAuth 2 authorization-code flow of the forge twins' OAuth applications: the authorize page a browser is sent
to and the token endpoint, as the vendors document them (GitHub's token endpoint is not in its REST OpenAPI
document). A request the documented flow would refuse is answered as the forge answers it and recorded in
`problems` (which the twin's test asserts empty) when it is Terrace's fault.

- GitHub, "Authorizing OAuth apps" (docs.github.com, the web application flow): `GET /login/oauth/authorize` with
  `client_id` (required), `redirect_uri`, `login`, `scope`, `state`, `allow_signup`, `prompt`; the redirect to the
  callback carries `code` and `state`. `POST /login/oauth/access_token` with `client_id`, `client_secret`, `code`
  (required) and `redirect_uri` (which must then be the authorize request's), `repository_id`; `Accept:
  application/json` answers `{"access_token", "scope", "token_type": "bearer"}`, and a refused code is a 200 with
  `{"error": "bad_verification_code", "error_description", "error_uri"}`. A code works once, for ten minutes.
- GitLab, "OAuth 2.0 identity provider API" (docs.gitlab.com, the authorization code flow): `GET /oauth/authorize`
  with `client_id`, `redirect_uri`, `response_type=code`, `state`, `scope` (required but for PKCE's own
  `code_challenge`, `code_challenge_method`); `POST /oauth/token` with `client_id`, `client_secret`, `code`,
  `grant_type=authorization_code`, `redirect_uri` (all required; `code_verifier` with PKCE) answers `{"access_token",
  "token_type": "Bearer", "expires_in": 7200, "refresh_token", "scope", "created_at"}`; `grant_type=refresh_token`
  with `refresh_token` (and the client's id, secret and redirect URI) answers a new pair and revokes the old refresh
  token; a refused grant is a 400 `{"error": "invalid_grant", "error_description"}`.
- Bitbucket Cloud, "OAuth 2.0" (developer.atlassian.com, the authorization code grant): `GET /site/oauth2/authorize`
  with `client_id`, `response_type=code` and `state` (the consumer holds its callback URL and permissions; a
  `redirect_uri` given must be that one); `POST /site/oauth2/access_token` with the consumer's key and secret as basic
  authentication and `grant_type=authorization_code`, `code` (or `grant_type=refresh_token`, `refresh_token`)
  answers `{"access_token", "scopes", "expires_in": 7200, "refresh_token", "token_type": "bearer"}`.
"""

from __future__ import annotations

import base64
import html
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

CODE_TTL_S = 600
GITHUB_AUTHORIZE = {"client_id", "redirect_uri", "login", "scope", "state", "allow_signup", "prompt"}
GITHUB_TOKEN = {"client_id", "client_secret", "code", "redirect_uri", "repository_id", "grant_type", "refresh_token"}
GITLAB_AUTHORIZE = {"client_id", "redirect_uri", "response_type", "state", "scope", "code_challenge",
                    "code_challenge_method"}  # fmt: skip
GITLAB_TOKEN = {"client_id", "client_secret", "code", "grant_type", "redirect_uri", "code_verifier", "refresh_token"}
BITBUCKET_AUTHORIZE = {"client_id", "response_type", "state", "redirect_uri", "scope"}
BITBUCKET_TOKEN = {"grant_type", "code", "refresh_token", "redirect_uri"}
AUTHORIZE = {"github": GITHUB_AUTHORIZE, "gitlab": GITLAB_AUTHORIZE, "bitbucket": BITBUCKET_AUTHORIZE}
TOKEN = {"github": GITHUB_TOKEN, "gitlab": GITLAB_TOKEN, "bitbucket": BITBUCKET_TOKEN}
PATHS = {"github": ("/login/oauth/authorize", "/login/oauth/access_token"),
         "gitlab": ("/oauth/authorize", "/oauth/token"),
         "bitbucket": ("/site/oauth2/authorize", "/site/oauth2/access_token")}  # fmt: skip
GITHUB_200 = ("bad_verification_code", "redirect_uri_mismatch", "incorrect_client_credentials")  # errors as 200s
Answer = tuple[int, dict[str, str], bytes]


@dataclass
class OAuthApps:
    flavour: str  # github, gitlab or bitbucket
    access_token: str  # the token a grant hands out (the twin's REST credential)
    apps: dict[str, tuple[str, str]] = field(default_factory=dict)  # client id -> (secret, redirect uri)
    codes: dict[str, tuple[str, str, float]] = field(default_factory=dict)  # code -> (client id, redirect, when)
    refresh_tokens: dict[str, str] = field(default_factory=dict)  # refresh token -> client id (GitLab's)
    problems: list[str] = field(default_factory=list)
    token_requests: list[dict[str, str]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def register(self, redirect_uri: str) -> tuple[str, str]:
        """A new OAuth application with its callback URL: (client id, client secret)."""
        client_id, secret = f"app-{secrets.token_hex(6)}", secrets.token_hex(20)
        self.apps[client_id] = (secret, redirect_uri)
        return client_id, secret

    def handles(self, path: str) -> bool:
        return path in (self._authorize_path, self._token_path)

    @property
    def _authorize_path(self) -> str:
        return PATHS[self.flavour][0]

    @property
    def _token_path(self) -> str:
        return PATHS[self.flavour][1]

    def answer(self, method: str, raw_path: str, headers: dict[str, str], body: bytes) -> Answer:
        parts = urlsplit(raw_path)
        if parts.path == self._authorize_path and method == "GET":
            return self._authorize(dict(parse_qsl(parts.query)))
        if parts.path == self._token_path and method == "POST":
            return self._token(headers, body)
        return self._refuse(404, f"{method} {parts.path}: not an OAuth endpoint", "not_found")

    # the authorize page (the browser's) ----------------------------------------------------------
    def _authorize(self, query: dict[str, str]) -> Answer:
        known = AUTHORIZE[self.flavour]
        extra = set(query) - known - {"approve"}
        app = self.apps.get(query.get("client_id", ""))
        if extra or app is None:
            return self._page(400, f"unknown parameters {sorted(extra)}" if extra else "unknown client_id")
        if query.get("redirect_uri", app[1]) != app[1]:
            return self._page(400, "The redirect_uri is not associated with this application.")
        if self.flavour == "gitlab" and (query.get("response_type") != "code" or "redirect_uri" not in query):
            return self._page(400, "response_type=code and redirect_uri are required")
        if self.flavour == "bitbucket" and query.get("response_type") != "code":
            return self._page(400, "response_type=code is required")
        if not query.get("state"):
            with self._lock:
                self.problems.append("an authorize request without state")
        if query.get("approve") != "1":  # the page the user sees: approving is a GET of the same URL
            approve = f"{self._authorize_path}?{urlencode({**query, 'approve': '1'})}"
            name, scopes = html.escape(query["client_id"]), html.escape(query.get("scope", ""))
            link = f'<a id="authorize" href="{html.escape(approve)}">Authorize</a>'
            head = '<!doctype html><title>Authorize application</title><link rel="icon" href="data:,">'
            text = f"{head}<h1>Authorize {name}</h1><p>{scopes}</p>{link}"
            return 200, {"Content-Type": "text/html; charset=utf-8"}, text.encode()
        code = secrets.token_hex(10)
        with self._lock:
            self.codes[code] = (query["client_id"], app[1], time.monotonic())
        back = {"code": code, **({"state": query["state"]} if "state" in query else {})}
        return 302, {"Location": f"{app[1]}?{urlencode(back)}"}, b""

    def _page(self, status: int, text: str) -> Answer:
        with self._lock:
            self.problems.append(f"authorize: {text}")
        return status, {"Content-Type": "text/plain"}, text.encode()

    # the token endpoint (the server's) -----------------------------------------------------------
    def _token(self, headers: dict[str, str], body: bytes) -> Answer:
        lowered = {k.lower(): v for k, v in headers.items()}
        if not lowered.get("content-type", "").startswith("application/x-www-form-urlencoded"):
            return self._refuse(400, "the token request is not a form", "invalid_request")
        if self.flavour == "github" and "application/json" not in lowered.get("accept", ""):
            self.problems.append("the token request does not accept JSON (GitHub answers a query string then)")
        form = dict(parse_qsl(body.decode()))
        with self._lock:
            self.token_requests.append(form)
        extra = set(form) - TOKEN[self.flavour]
        if self.flavour == "bitbucket":  # the consumer authenticates as basic
            user, _, password = _basic(lowered.get("authorization", ""))
            form = {**form, "client_id": user, "client_secret": password}
        app = self.apps.get(form.get("client_id", ""))
        if extra:
            return self._refuse(400, f"unknown parameters {sorted(extra)}", "invalid_request")
        if app is None or form.get("client_secret") != app[0]:
            error = "incorrect_client_credentials" if self.flavour == "github" else "invalid_client"
            return self._refuse(401, "Client authentication failed", error, fault=False)
        grant = form.get("grant_type", "authorization_code" if self.flavour == "github" else "")
        if grant == "refresh_token":
            return self._refreshed(form)
        if grant != "authorization_code" or (self.flavour == "gitlab" and "redirect_uri" not in form):
            return self._refuse(400, "grant_type=authorization_code and redirect_uri are required", "invalid_request")
        with self._lock:
            found = self.codes.pop(form.get("code", ""), None)
        if found is None or found[0] != form["client_id"] or time.monotonic() - found[2] > CODE_TTL_S:
            return self._refuse(400, "The code passed is incorrect or expired.", "bad_verification_code", fault=False)
        if form.get("redirect_uri", found[1]) != found[1]:
            text = "The redirect_uri MUST match the registered callback URL."
            return self._refuse(400, text, "redirect_uri_mismatch")
        return self._granted(form["client_id"])

    def _refreshed(self, form: dict[str, str]) -> Answer:
        if self.flavour == "github":  # an OAuth app's tokens do not expire: nothing to refresh
            return self._refuse(400, "refresh_token is for expiring user tokens", "unsupported_grant_type")
        with self._lock:
            owner = self.refresh_tokens.pop(form.get("refresh_token", ""), None)
        if owner != form["client_id"]:
            return self._refuse(400, "The provided authorization grant is invalid.", "invalid_grant", fault=False)
        return self._granted(form["client_id"])

    def _granted(self, client_id: str) -> Answer:
        if self.flavour == "github":
            answer: dict[str, Any] = {"access_token": self.access_token, "scope": "repo", "token_type": "bearer"}
        else:
            refresh = secrets.token_hex(32)
            with self._lock:
                self.refresh_tokens[refresh] = client_id
            answer = {"access_token": self.access_token, "token_type": "Bearer", "expires_in": 7200,
                      "refresh_token": refresh, "scope": "api", "created_at": int(time.time())}  # fmt: skip
            if self.flavour == "bitbucket":
                answer = {"access_token": self.access_token, "token_type": "bearer", "expires_in": 7200,
                          "refresh_token": refresh, "scopes": "repository pullrequest webhook",
                          "state": "authorization_code"}  # fmt: skip
        return 200, {"Content-Type": "application/json", "Cache-Control": "no-store"}, json.dumps(answer).encode()

    def _refuse(self, status: int, text: str, error: str, *, fault: bool = True) -> Answer:
        """The forge's refusal; `fault`: Terrace's request was malformed (a problem), not just a bad grant."""
        if fault:
            with self._lock:
                self.problems.append(f"token: {text}")
        if self.flavour == "github" and error in GITHUB_200:
            status = 200
        return status, {"Content-Type": "application/json"}, json.dumps(
            {"error": error, "error_description": text}).encode()  # fmt: skip


def _basic(authorization: str) -> tuple[str, str, str]:
    """(user, ":", password) of a basic authorization header ("", "", "" when it is none)."""
    if not authorization.startswith("Basic "):
        return "", "", ""
    try:
        return base64.b64decode(authorization[6:]).decode().partition(":")
    except (ValueError, UnicodeDecodeError):
        return "", "", ""
