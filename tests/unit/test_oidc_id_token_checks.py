"""Single sign-on refuses what an issuer or its tokens get wrong with a clear sign-in page, never a 500: ID tokens with
another audience, issuer or nonce, expired or not yet valid, signed by a key the issuer does not publish (after one
fetch of its JWKS again) or with a symmetric or no algorithm; a discovery document of another issuer or not JSON; a
token endpoint answering an OAuth error or no JSON object. Against a small issuer served on localhost by the test,
whose keys, documents and answers each test sets."""

from __future__ import annotations

import base64
import functools
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from fastapi.testclient import TestClient
from joserfc import jwt
from joserfc.jwk import KeySet, OctKey, RSAKey
from table_items import memory_items
from terrace.bootstrap import build_memory
from terrace.config import Settings
from terrace.domain.errors import Unauthenticated
from terrace.web.app import create_app
from terrace.web.ui.oidc import BROWSER_COOKIE

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
CLIENT_ID = "terrace"


@functools.cache
def signing_key() -> RSAKey:
    """The issuer's signing key: one for the module (a 2048-bit key takes 0.1-0.5 s to make, every test made one)."""
    return RSAKey.generate_key(2048, parameters={"kid": "k1"}, private=True)


class Issuer:
    """What the issuer serves: discovery (`discovery` overrides it, a str is sent as it is), the JWKS of
    `published` (fetches counted), and `token_answer` at the token endpoint."""

    def __init__(self) -> None:
        self.url = ""
        self.signing = signing_key()
        self.published = [self.signing]
        self.jwks_fetches = 0
        self.discovery: Any = None
        self.token_answer: tuple[int, Any] = (400, {"error": "invalid_grant"})

    def token(
        self, key: Any = None, alg: str = "RS256", exp_in: int = 300, nbf_in: int | None = None, **changes: Any
    ) -> str:
        """An ID token with these claims changed (None: left out), expiring or valid from so many seconds from now."""
        now = int(time.time())
        claims = {"iss": self.url, "aud": CLIENT_ID, "sub": "sub-ida", "iat": now, "exp": now + exp_in, "nonce": "n"}
        claims |= {"nbf": now + nbf_in} if nbf_in is not None else {}
        claims = {k: v for k, v in (claims | changes).items() if v is not None}
        key = key or self.signing
        return jwt.encode({"alg": alg, "kid": key.kid}, claims, key)

    def answer(self, path: str) -> tuple[int, Any]:
        if path == "/.well-known/openid-configuration":
            default = {
                "issuer": self.url,
                "authorization_endpoint": f"{self.url}/authorize",
                "token_endpoint": f"{self.url}/token",
                "jwks_uri": f"{self.url}/jwks",
                "id_token_signing_alg_values_supported": ["RS256", "HS256", "none"],
            }
            return 200, default if self.discovery is None else self.discovery
        if path == "/jwks":
            self.jwks_fetches += 1
            return 200, KeySet(self.published).as_dict(private=False)
        if path == "/token":
            return self.token_answer
        return 404, {}


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    served = Issuer()

    class Handler(BaseHTTPRequestHandler):
        def _send(self) -> None:
            status, body = served.answer(urlsplit(self.path).path)
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
            self.send_response(status)
            if status == 302:
                self.send_header("Location", f"{served.url}/jwks")
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802
            self._send()

        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self._send()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    served.url = f"http://127.0.0.1:{server.server_port}"
    # shutdown() waits for serve_forever to notice it: within its poll interval (0.5 s by default, every test)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def app(issuer: Issuer) -> tuple[Any, TestClient]:
    settings = Settings(
        table_name="memory",
        blob_bucket="memory",
        url_signing_secret="test-secret",
        public_url="https://testserver",
        oidc_issuer=issuer.url,
        oidc_client_id=CLIENT_ID,
        oidc_client_secret="s3cret",
    )
    container = build_memory(settings)
    return container, TestClient(create_app(container), base_url="https://testserver", follow_redirects=False)


def states(container: Any) -> int:
    return sum(1 for key in memory_items(container.table) if key[1] == "state")


def started(client: TestClient) -> dict[str, str]:
    start = client.get("/app/sign-in/oidc")
    assert start.status_code == 303
    return {k: v[0] for k, v in parse_qs(urlsplit(start.headers["location"]).query).items()}


def test_a_valid_id_token_is_accepted_within_a_minutes_leeway(app: tuple[Any, TestClient], issuer: Issuer) -> None:
    container, _ = app
    assert container.oidc._verified(issuer.token(exp_in=-30, nbf_in=30), "n")["sub"] == "sub-ida"
    assert container.oidc._verified(issuer.token(aud=[CLIENT_ID, "other"], azp=CLIENT_ID), "n")["sub"] == "sub-ida"


@pytest.mark.parametrize(
    "changes",
    [
        {"aud": "another-client"},
        {"aud": None},
        {"iss": "https://impostor.example.com"},
        {"exp_in": -120},
        {"nbf_in": 120},
        {"nonce": "another-sign-ins"},
        {"nonce": None},
        {"sub": None},
        {"azp": "another-client"},
    ],
    ids=["aud", "no-aud", "iss", "expired", "not-yet-valid", "nonce", "no-nonce", "no-sub", "azp"],
)
def test_an_id_token_failing_a_claim_check_is_refused(
    app: tuple[Any, TestClient], issuer: Issuer, changes: dict[str, Any]
) -> None:
    container, _ = app
    with pytest.raises(Unauthenticated, match="the ID token was refused"):
        container.oidc._verified(issuer.token(**changes), "n")


def test_an_unknown_key_id_fetches_the_jwks_once_more_then_refuses(app: tuple[Any, TestClient], issuer: Issuer) -> None:
    container, _ = app
    assert container.oidc._verified(issuer.token(), "n")
    assert issuer.jwks_fetches == 1  # cached from then on
    stranger = RSAKey.generate_key(2048, parameters={"kid": "k-unknown"}, private=True)
    with pytest.raises(Unauthenticated, match="key the identity provider does not publish"):
        container.oidc._verified(issuer.token(key=stranger), "n")
    assert issuer.jwks_fetches == 2  # one refresh, no more

    rotated = RSAKey.generate_key(2048, parameters={"kid": "k2"}, private=True)
    issuer.published = [issuer.signing, rotated]  # the issuer rotates: the next unknown kid is found after a refresh
    assert container.oidc._verified(issuer.token(key=rotated), "n")
    assert container.oidc._verified(issuer.token(key=rotated), "n")
    assert issuer.jwks_fetches == 3


def test_symmetric_and_unsigned_id_tokens_are_refused(app: tuple[Any, TestClient], issuer: Issuer) -> None:
    """The issuer's metadata offers HS256 and none; only asymmetric algorithms are accepted, whatever it offers."""
    container, _ = app
    secret = OctKey.import_key("s3cret-s3cret-s3cret-s3cret-s3cret", parameters={"kid": "k1"})
    with pytest.raises(Unauthenticated):
        container.oidc._verified(issuer.token(key=secret, alg="HS256"), "n")
    signed = issuer.token().split(".")
    header = base64.urlsafe_b64encode(json.dumps({"alg": "none", "kid": "k1"}).encode()).rstrip(b"=").decode()
    with pytest.raises(Unauthenticated):
        container.oidc._verified(f"{header}.{signed[1]}.", "n")


@pytest.mark.parametrize("discovery", ["not json", [], {"issuer": "https://impostor.example.com"}, {"issuer": "x"}])
def test_a_bad_discovery_document_is_a_sign_in_page_and_writes_no_state(
    app: tuple[Any, TestClient], issuer: Issuer, discovery: Any
) -> None:
    container, client = app
    issuer.discovery = discovery if discovery != {"issuer": "x"} else {"issuer": issuer.url}  # no endpoints
    r = client.get("/app/sign-in/oidc")
    assert r.status_code == 401 and r.headers["content-type"].startswith("text/html")
    assert states(container) == 0


def test_an_issuers_redirect_is_not_followed(app: tuple[Any, TestClient], issuer: Issuer) -> None:
    container, client = app
    original = issuer.answer
    issuer.answer = lambda path: (302, "") if path.startswith("/.well-known") else original(path)  # type: ignore[method-assign]
    assert client.get("/app/sign-in/oidc").status_code == 401
    assert issuer.jwks_fetches == 0 and states(container) == 0


def test_an_unreachable_issuer_is_a_sign_in_page(app: tuple[Any, TestClient]) -> None:
    container, _ = app
    closed = build_memory(container.settings.replace(oidc_issuer="http://127.0.0.1:9"))
    r = TestClient(create_app(closed), base_url="https://testserver").get("/app/sign-in/oidc")
    assert r.status_code == 401 and "could not be reached" in r.text
    assert states(closed) == 0


@pytest.mark.parametrize(
    "answer, says",
    [
        ((400, {"error": "invalid_grant"}), "refused the sign-in: invalid_grant"),
        ((500, "oops"), "answered 500"),
        ((200, "not json"), "not usable"),
        ((200, ["a", "list"]), "not usable"),
        ((200, {"access_token": "a", "token_type": "Bearer"}), "without an ID token"),
    ],
)
def test_a_bad_token_endpoint_answer_is_a_sign_in_page(
    app: tuple[Any, TestClient], issuer: Issuer, answer: tuple[int, Any], says: str
) -> None:
    container, client = app
    query = started(client)
    issuer.token_answer = answer
    r = client.get("/app/sign-in/oidc/callback", params={"state": query["state"], "code": "c"})
    assert r.status_code == 401 and says in r.text
    assert "terrace_session" not in r.headers.get("set-cookie", "")
    assert states(container) == 0  # spent all the same


def test_an_id_token_for_another_client_signs_nobody_in(app: tuple[Any, TestClient], issuer: Issuer) -> None:
    container, client = app
    query = started(client)
    assert client.cookies.get(BROWSER_COOKIE) is not None
    issuer.token_answer = (200, {"access_token": "a", "token_type": "Bearer", "id_token": ""})
    issuer.token_answer[1]["id_token"] = issuer.token(aud="another-client", nonce=query["nonce"])
    r = client.get("/app/sign-in/oidc/callback", params={"state": query["state"], "code": "c"})
    assert r.status_code == 401 and "the ID token was refused" in r.text
    assert "terrace_session" not in r.headers.get("set-cookie", "")
    assert container.accounts.find_user("sub-ida") is None

    query = started(client)
    issuer.token_answer[1]["id_token"] = issuer.token(nonce=query["nonce"], preferred_username="ida")
    r = client.get("/app/sign-in/oidc/callback", params={"state": query["state"], "code": "c"})
    assert r.status_code == 303 and "terrace_session" in r.headers["set-cookie"]
    assert container.accounts.find_user("ida") is not None


def test_a_single_sign_on_is_in_the_sites_audit_trail_a_refused_one_too(
    app: tuple[Any, TestClient], issuer: Issuer
) -> None:
    """The identity provider's redirect is a sign-in: its event names who signed in (or, refused, nobody), once."""
    container, client = app
    query = started(client)
    issuer.token_answer = (200, {"access_token": "a", "token_type": "Bearer", "id_token": ""})
    issuer.token_answer[1]["id_token"] = issuer.token(aud="another-client", nonce=query["nonce"])
    assert client.get("/app/sign-in/oidc/callback", params={"state": query["state"], "code": "c"}).status_code == 401
    query = started(client)
    issuer.token_answer[1]["id_token"] = issuer.token(nonce=query["nonce"], preferred_username="ida")
    assert client.get("/app/sign-in/oidc/callback", params={"state": query["state"], "code": "c"}).status_code == 303
    now_us = int(time.time() * 1_000_000)
    events = list(container.audit_store.between("", now_us - 60_000_000, now_us + 60_000_000, 100))
    said = [(e.action, e.actor.kind, e.actor.name, e.outcome) for e in events if e.resource_type == "session"]
    assert said == [("session.sign-in", "anonymous", "", 401), ("session.sign-in", "user", "ida", 303)]
