"""The OAuth 2 authorization-code flow of an OAuth client made with `key`/`secret` (an OAuth application registered
on the forge): the authorize URL the browser is sent to, and the token endpoint's calls, through the outbound port
(`adapters/outbound.py`: every destination checked as any outbound request's, no redirect followed).

- GitHub, GitHub Enterprise Server, Gitea and Forgejo (GitHub's web application flow): `GET <http-url>/login/oauth/
  authorize?client_id=&redirect_uri=&scope=repo&state=`, then `POST <http-url>/login/oauth/access_token` (form:
  `client_id`, `client_secret`, `code`, `redirect_uri`; `Accept: application/json`). An error is a 200 with `error`.
- GitLab: `GET <http-url>/oauth/authorize?client_id=&redirect_uri=&response_type=code&scope=api&state=`, then
  `POST <http-url>/oauth/token` (form: the same and `grant_type=authorization_code`).
- Bitbucket Cloud (an OAuth consumer, whose callback URL and permissions are set on it): `GET <http-url>/site/
  oauth2/authorize?client_id=&response_type=code&state=`, then `POST <http-url>/site/oauth2/access_token` with the
  consumer's key and secret as basic authentication (form: `grant_type=authorization_code`, `code`).

A token that expires (GitLab's, Gitea's, Bitbucket's, a GitHub App's user token) comes with a refresh token;
`refresh` trades it for a new pair (`grant_type=refresh_token`) at the same endpoint.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from urllib.parse import urlencode

from terrace.adapters.outbound import Outbound
from terrace.domain.errors import BadRequest
from terrace.domain.vcs import OAuthClient, forge_kind

FLOW_KINDS = ("github", "gitlab", "bitbucket")  # the forges whose OAuth applications connect through the browser
SCOPES = {"github": "repo", "gitlab": "api"}  # repositories, their hooks and statuses; GitLab's whole API
TIMEOUT_S = 15.0
TOKEN_MAX = 4096  # characters of a token the forge hands out


@dataclass(frozen=True)
class Grant:
    access_token: str
    refresh_token: str | None = None
    expires_at: int | None = None  # seconds since the epoch; None: it does not expire


def callback_url(public_url: str, client_id: str) -> str:
    """Where the forge sends the browser back (the client's `callback-url`, which its operator registers with the
    forge's OAuth application): HCP's `/auth/<client id>/callback`."""
    return f"{public_url.rstrip('/')}/auth/{client_id}/callback"


def _paths(client: OAuthClient) -> tuple[str, str]:
    base = client.http_url.rstrip("/")
    if forge_kind(client.service_provider) == "gitlab":
        return f"{base}/oauth/authorize", f"{base}/oauth/token"
    if forge_kind(client.service_provider) == "bitbucket":
        return f"{base}/site/oauth2/authorize", f"{base}/site/oauth2/access_token"
    return f"{base}/login/oauth/authorize", f"{base}/login/oauth/access_token"


def connectable(client: OAuthClient) -> bool:
    """Whether the browser flow can connect this client (a forge whose OAuth web flow Terrace speaks)."""
    return forge_kind(client.service_provider) in FLOW_KINDS and bool(client.http_url)


def authorize_url(client: OAuthClient, redirect_uri: str, state: str) -> str:
    kind = forge_kind(client.service_provider)
    query = {"client_id": client.key, "redirect_uri": redirect_uri, "scope": SCOPES.get(kind, ""), "state": state}
    if kind == "bitbucket":  # the consumer names its callback URL and permissions
        query = {"client_id": client.key, "response_type": "code", "state": state}
    elif kind == "gitlab":
        query["response_type"] = "code"
    return f"{_paths(client)[0]}?{urlencode(query)}"


class TokenEndpoint:
    def __init__(self, outbound: Outbound) -> None:
        self._outbound = outbound

    def exchange(self, client: OAuthClient, secret: str, code: str, redirect_uri: str, now_s: int) -> Grant:
        """The code the forge handed the browser, for the client's token."""
        form = {"client_id": client.key, "client_secret": secret, "code": code, "redirect_uri": redirect_uri}
        if forge_kind(client.service_provider) != "github":
            form["grant_type"] = "authorization_code"
        return self._post(client, secret, form, now_s)

    def refresh(self, client: OAuthClient, secret: str, refresh_token: str, redirect_uri: str, now_s: int) -> Grant:
        form = {"client_id": client.key, "client_secret": secret, "refresh_token": refresh_token,
                "grant_type": "refresh_token", "redirect_uri": redirect_uri}  # fmt: skip
        return self._post(client, secret, form, now_s)

    def _post(self, client: OAuthClient, secret: str, form: dict[str, str], now_s: int) -> Grant:
        url = _paths(client)[1]
        headers = {"Accept": "application/json", "Content-Type": "application/x-www-form-urlencoded"}
        if forge_kind(client.service_provider) == "bitbucket":  # the consumer authenticates as basic, not in the form
            form = {k: v for k, v in form.items() if k not in ("client_id", "client_secret", "redirect_uri")}
            headers["Authorization"] = "Basic " + base64.b64encode(f"{client.key}:{secret}".encode()).decode()
        answer = self._outbound.post(url, urlencode(form).encode(), headers, TIMEOUT_S)
        if answer.status is None:
            raise BadRequest(f"the forge's token endpoint did not answer: {answer.error}")
        try:
            found = json.loads(answer.body)
        except ValueError:
            found = None
        if not isinstance(found, dict):
            raise BadRequest(f"the forge's token endpoint answered {answer.status} without a token")
        if not answer.ok or found.get("error") or not isinstance(found.get("access_token"), str):
            reason = str(found.get("error_description") or found.get("error") or answer.status)[:300]
            raise BadRequest(f"the forge refused the authorization: {reason}")
        token = found["access_token"]
        if not token or len(token) > TOKEN_MAX:
            raise BadRequest("the forge handed out an empty or oversized token")
        refresh = found.get("refresh_token")
        expires = found.get("expires_in")
        return Grant(token, refresh if isinstance(refresh, str) and refresh else None,
                     now_s + int(expires) if isinstance(expires, int) and expires > 0 else None)  # fmt: skip
