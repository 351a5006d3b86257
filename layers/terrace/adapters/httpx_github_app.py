"""The GitHub App port (`github_app.py`) over GitHub's REST API with httpx (`httpx_forge.py`: every request under
the outbound destination rules, answers read within bounds). The App authenticates with an RS256 JSON Web Token
signed by joserfc with its private key; installation tokens are cached per installation and repository until five
minutes before they expire. The private key lives in this object only, never in an environment of a child."""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from terrace.adapters.forge import ForgeAccess, ForgeError
from terrace.adapters.github_app import Installation
from terrace.adapters.github_forge import HEADERS
from terrace.adapters.httpx_forge import ForgeHttp
from terrace.adapters.httpx_outbound import Resolver, system_resolver
from terrace.domain.destinations import Allowance

JWT_PAST_S = 60  # GitHub's advice: issued a minute in the past against clock drift
JWT_LIFETIME_S = 540  # at most 10 minutes after iat
TOKEN_MARGIN_S = 300  # an installation token is renewed five minutes before it expires
PAGES_MAX = 10  # `GET /app/installations`, `GET /installation/repositories`: 100 a page


def _headers(access: ForgeAccess) -> dict[str, str]:
    return {**HEADERS, "Authorization": f"Bearer {access.token}"}


def app_jwt(app_id: str, key: Any, now: float) -> str:
    """The App's JSON Web Token (RS256) under `key` (a joserfc RSAKey, or the PEM of one)."""
    from joserfc import jwt  # loaded on the first App call, not on a cold start
    from joserfc.jwk import RSAKey

    key = RSAKey.import_key(key) if isinstance(key, str) else key
    claims = {"iat": int(now) - JWT_PAST_S, "exp": int(now) + JWT_LIFETIME_S, "iss": app_id}
    return jwt.encode({"alg": "RS256", "typ": "JWT"}, claims, key, algorithms=["RS256"])


def _installation(found: Any) -> Installation:
    if not isinstance(found, dict) or not isinstance(found.get("id"), int):
        raise ForgeError("the App's installation is not GitHub's shape")
    account = found.get("account") or {}
    return Installation(found["id"], str(account.get("login") or ""), str(found.get("target_type") or
                        account.get("type") or ""), str(found.get("html_url") or ""),
                        str(account.get("avatar_url") or ""))  # fmt: skip


class HttpxGitHubApp:
    def __init__(
        self,
        app_id: str,
        private_key_pem: str,
        api_url: str,
        http_url: str,
        slug: str,
        allowance: Allowance,
        resolver: Resolver = system_resolver,
        verify: ssl.SSLContext | bool = True,
        now: Callable[[], float] = time.time,
    ) -> None:
        self._id, self._key, self._now = app_id, private_key_pem, now
        self.api_url, self.http_url, self.slug = api_url.rstrip("/"), http_url.rstrip("/"), slug
        self._http = ForgeHttp(_headers, allowance, resolver, verify)
        self._tokens: dict[tuple[int, str | None], tuple[str, float]] = {}
        self._lock = threading.Lock()
        self._signing: Any = None  # the private key, imported once (checking an RSA key costs ~0.1 s)
        self._jwt: tuple[str, float] = ("", 0.0)  # the App's JWT and when it stops being reused

    def _as_app(self) -> ForgeAccess:
        """The App's JWT, reused until a minute before it expires."""
        now = self._now()
        with self._lock:
            if self._jwt[1] <= now:
                if self._signing is None:
                    from joserfc.jwk import RSAKey

                    self._signing = RSAKey.import_key(self._key)
                self._jwt = (app_jwt(self._id, self._signing, now), now + JWT_LIFETIME_S - JWT_PAST_S)
            return ForgeAccess(self.api_url, self._jwt[0])

    def installations(self) -> list[Installation]:
        found: list[Installation] = []
        for page in range(1, PAGES_MAX + 1):
            answer = self._http.json(self._as_app(), "GET", f"/app/installations?per_page=100&page={page}")
            if not isinstance(answer, list):
                raise ForgeError("GET /app/installations: not a list")
            found += [_installation(item) for item in answer]
            if len(answer) < 100:
                break
        return found

    def installation(self, installation_id: int) -> Installation:
        return _installation(self._http.json(self._as_app(), "GET", f"/app/installations/{int(installation_id)}"))

    def token(self, installation_id: int, repository: str | None) -> str:
        key = (int(installation_id), repository)
        with self._lock:
            kept = self._tokens.get(key)
        if kept is not None and kept[1] - TOKEN_MARGIN_S > self._now():
            return kept[0]
        body = {"repositories": [repository.partition("/")[2]]} if repository else {}
        path = f"/app/installations/{int(installation_id)}/access_tokens"
        answer = self._http.json(self._as_app(), "POST", path, body)
        token, expires = answer.get("token"), answer.get("expires_at")
        if not isinstance(token, str) or not token:
            raise ForgeError(f"POST {path}: no token in GitHub's answer")
        try:
            until = datetime.fromisoformat(str(expires).replace("Z", "+00:00")).timestamp()
        except ValueError:
            until = self._now() + 3600
        with self._lock:
            self._tokens = {k: v for k, v in self._tokens.items() if v[1] > self._now()}  # drop expired ones
            self._tokens[key] = (token, until)
        return token

    def repositories(self, installation_id: int) -> list[str]:
        access = ForgeAccess(self.api_url, self.token(installation_id, None))
        names: list[str] = []
        for page in range(1, PAGES_MAX + 1):
            answer = self._http.json(access, "GET", f"/installation/repositories?per_page=100&page={page}")
            items = answer.get("repositories") if isinstance(answer, dict) else None
            if not isinstance(items, list):
                raise ForgeError("GET /installation/repositories: not GitHub's shape")
            names += [str(r["full_name"]) for r in items if isinstance(r, dict) and isinstance(r.get("full_name"), str)]
            if len(items) < 100:
                break
        return names
