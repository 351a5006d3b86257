"""The forge twin (`forge_twin.py`) as a GitHub with a GitHub App: its installations (each an account and the
repositories it installed the App on), the App's calls authenticated by a JSON Web Token checked as GitHub checks it
(RS256 under the App's public key, `iss` the App's id, issued in the past, at most ten minutes long: PyJWT, not the
code under test), installation access tokens (for the repositories asked for, one hour), `GET
/installation/repositories` with such a token, and the REST calls on a repository accepted with a token that may
reach it. Deliveries of the App's one webhook are signed with the App's secret and name the installation. Every
request still passes GitHub's OpenAPI document (`github_contract.py`)."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import time
import uuid
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from forge_twin import ForgeTwin
from github_contract import contract

OK = {"Content-Type": "application/json"}
APP_ID = "424242"


def _json(status: int, value: Any) -> tuple[int, dict[str, str], bytes]:
    return status, OK, json.dumps(value).encode()


class GitHubAppTwin(ForgeTwin):
    def __init__(self, root: Path, token: str, webhook_secret: str = "app-webhook-secret") -> None:
        super().__init__(root, token)
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.private_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                             serialization.NoEncryption()).decode()  # fmt: skip
        self._public = key.public_key()
        self.webhook_secret = webhook_secret
        self.installations: dict[int, tuple[str, list[str]]] = {}  # id -> (account, repositories)
        self.tokens: dict[str, tuple[int, tuple[str, ...], float]] = {}  # token -> (installation, repos, expiry)
        self.jwts_seen = 0
        self.jwt_log: list[str] = []  # the JWT of each call as the App, in order
        self.token_lifetime_s = 3600  # GitHub's installation tokens last an hour

    def install(self, installation_id: int, account: str, repositories: list[str]) -> None:
        self.installations[installation_id] = (account, list(repositories))

    # the App's deliveries --------------------------------------------------------------------
    def app_delivery(
        self, event: str, payload: dict[str, Any], installation_id: int, delivery: str | None = None,
        secret: str | None = None,
    ) -> tuple[bytes, dict[str, str]]:  # fmt: skip
        """A delivery of the App's webhook (body, headers): the payload naming the installation, signed."""
        named = {**payload, "installation": {"id": installation_id, "node_id": "MDIz"}}
        definition = "push$event" if event == "push" else f"{event}${payload.get('action')}"
        contract().check_payload(definition, named)  # GitHub's schema of the event, with the installation
        body = json.dumps(named).encode()
        signature = hmac.new((secret or self.webhook_secret).encode(), body, hashlib.sha256).hexdigest()
        headers = {"X-GitHub-Event": event, "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
                   "X-Hub-Signature-256": f"sha256={signature}", "Content-Type": "application/json",
                   "X-GitHub-Hook-Installation-Target-Type": "integration",
                   "X-GitHub-Hook-Installation-Target-ID": APP_ID}  # fmt: skip
        return body, headers

    # credentials -----------------------------------------------------------------------------
    def _app_jwt_problem(self, authorization: str) -> str | None:
        try:
            claims = jwt.decode(authorization.removeprefix("Bearer "), self._public, algorithms=["RS256"],
                                options={"require": ["iat", "exp", "iss"]}, leeway=5)  # fmt: skip
        except jwt.PyJWTError as exc:
            return f"not the App's JWT: {exc}"
        if str(claims["iss"]) != APP_ID:
            return "the JWT's iss is not the App's id"
        if claims["exp"] - claims["iat"] > 600 or claims["iat"] > time.time() + 5:
            return "the JWT lasts more than 10 minutes or is issued in the future"
        self.jwts_seen += 1
        self.jwt_log.append(authorization)
        return None

    def _authorized(self, path: str, authorization: str) -> bool:
        if super()._authorized(path, authorization):
            return True
        found = self.tokens.get(authorization.removeprefix("Bearer "))
        m = re.match(r"^/repos/([^/]+/[^/]+)", path)
        return found is not None and found[2] > time.time() and m is not None and m.group(1) in found[1]

    # the App's REST calls ----------------------------------------------------------------------
    def _shown(self, installation_id: int) -> dict[str, Any]:
        account = self.installations[installation_id][0]
        return {"id": installation_id, "account": {"login": account, "type": "Organization",
                "avatar_url": f"{self.http_url}/avatars/{account}"}, "target_type": "Organization",
                "html_url": f"{self.http_url}/organizations/{account}/settings/installations/{installation_id}",
                "app_id": int(APP_ID), "repository_selection": "selected"}  # fmt: skip

    def _app_request(self, method: str, path: str, authorization: str, body: bytes) -> Any:
        if path == "/installation/repositories":
            found = self.tokens.get(authorization.removeprefix("Bearer "))
            if found is None or found[2] < time.time():
                return _json(401, {"message": "Bad credentials"})
            names = found[1]
            repositories = [{"full_name": n, "name": n.split("/")[1], "private": True} for n in names]
            return _json(200, {"total_count": len(names), "repositories": repositories})
        if problem := self._app_jwt_problem(authorization):
            return _json(401, {"message": f"A JSON web token could not be decoded: {problem}"})
        if path == "/app/installations":
            return _json(200, [self._shown(i) for i in sorted(self.installations)])
        m = re.match(r"^/app/installations/(\d+)(/access_tokens)?$", path)
        if m is None or int(m.group(1)) not in self.installations:
            return _json(404, {"message": "Not Found"})
        installation = int(m.group(1))
        if not m.group(2):
            return _json(200, self._shown(installation))
        account, reachable = self.installations[installation]
        asked = (json.loads(body) if body else {}).get("repositories")
        names = reachable if asked is None else [f"{account}/{n}" for n in asked]
        if any(n not in reachable for n in names):
            return _json(422, {"message": "There is at least one repository that does not exist or is not "
                                          "accessible to the parent installation."})  # fmt: skip
        token = "ghs_" + secrets.token_hex(18)
        self.tokens[token] = (installation, tuple(names), time.time() + self.token_lifetime_s)
        expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + self.token_lifetime_s))
        return _json(201, {"token": token, "expires_at": expires, "permissions": {"contents": "read"},
                           "repository_selection": "selected"})  # fmt: skip
