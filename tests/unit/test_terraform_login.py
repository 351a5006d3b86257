"""`terraform login` through the HTTP endpoints as the CLI and a browser use them: discovery, the approval page
(sign-in first, CSRF), the PKCE code exchange, and every way a code or a request can be wrong."""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from fastapi.testclient import TestClient
from state_helpers import Env, make_env
from terrace.domain import clock
from terrace.web.app import create_app
from terrace.web.ui.auth import local_next
from ui_helpers import sign_in

REDIRECT = "http://localhost:10003/login"


@pytest.fixture
def env() -> Env:
    return make_env()


def browser(env: Env) -> TestClient:
    return TestClient(create_app(env.container), base_url="https://testserver", follow_redirects=False)


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def authorize_url(challenge: str, redirect: str = REDIRECT, **extra: str) -> str:
    params = {
        "client_id": "terraform-cli",
        "response_type": "code",
        "redirect_uri": redirect,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "st-123",
        **extra,
    }
    return "/app/oauth/authorize?" + "&".join(f"{k}={quote(v, safe='')}" for k, v in params.items())


def hidden_fields(html: str) -> dict[str, str]:
    return dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', html))


def approve(env: Env, client: TestClient, challenge: str, decision: str = "approve") -> dict[str, list[str]]:
    page = client.get(authorize_url(challenge))
    assert page.status_code == 200, page.text
    assert "alice" in page.text and "10003" in page.text
    r = client.post("/app/oauth/authorize", data={**hidden_fields(page.text), "decision": decision})
    assert r.status_code == 303
    target = urlsplit(r.headers["location"])
    assert f"{target.scheme}://{target.netloc}{target.path}" == REDIRECT
    return parse_qs(target.query)


def signed_in(env: Env) -> TestClient:
    client = browser(env)
    assert sign_in(client, env.token).status_code == 303
    return client


def exchange(env: Env, code: str, verifier: str, **extra: str) -> Any:
    form = {"grant_type": "authorization_code", "code": code, "code_verifier": verifier, "client_id": "terraform-cli"}
    form["redirect_uri"] = REDIRECT
    return browser(env).post("/oauth/token", data={**form, **extra})


def test_discovery_advertises_login_v1(env: Env) -> None:
    login = env.client.get("/.well-known/terraform.json").json()["login.v1"]
    assert login == {
        "client": "terraform-cli",
        "grant_types": ["authz_code"],
        "authz": "/app/oauth/authorize",
        "token": "/oauth/token",
        "ports": [10000, 10010],
    }


def test_a_user_approves_and_the_cli_gets_a_working_token_of_theirs(env: Env) -> None:
    verifier, challenge = pkce()
    query = approve(env, signed_in(env), challenge)
    assert query["state"] == ["st-123"]
    r = exchange(env, query["code"][0], verifier)
    assert r.status_code == 200 and r.headers["cache-control"] == "no-store"
    assert r.json()["token_type"] == "bearer"
    token = r.json()["access_token"]
    me = env.client.get("/api/v2/account/details", headers={"Authorization": f"Bearer {token}"})
    assert me.status_code == 200 and me.json()["data"]["attributes"]["username"] == "alice"
    descriptions = [t.description for t in env.container.accounts.list_tokens(env.principal.subject_id)]
    assert any(d.startswith("terraform login") for d in descriptions)


def test_without_a_session_the_page_asks_to_sign_in_and_comes_back(env: Env) -> None:
    _, challenge = pkce()
    client = browser(env)
    r = client.get(authorize_url(challenge))
    assert r.status_code == 303 and r.headers["location"].startswith("/app/sign-in?next=")
    sign_in_page = client.get(r.headers["location"])
    back = hidden_fields(sign_in_page.text)["next"].replace("&amp;", "&")
    assert back.startswith("/app/oauth/authorize?")
    r = sign_in(client, env.token, next=back)
    assert r.status_code == 303 and r.headers["location"] == back
    assert "Approve" in client.get(back).text


def test_a_code_works_once_and_only_with_its_verifier_and_redirect(env: Env) -> None:
    verifier, challenge = pkce()
    client = signed_in(env)
    code = approve(env, client, challenge)["code"][0]
    wrong = exchange(env, code, pkce()[0])
    assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"
    assert exchange(env, code, verifier).status_code == 400  # the failed attempt spent it

    code = approve(env, client, challenge)["code"][0]
    assert exchange(env, code, verifier, redirect_uri="http://localhost:10004/login").json()["error"] == "invalid_grant"
    code = approve(env, client, challenge)["code"][0]
    assert exchange(env, code, verifier).status_code == 200
    replay = exchange(env, code, verifier)
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"


def test_an_expired_code_is_refused(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    verifier, challenge = pkce()
    code = approve(env, signed_in(env), challenge)["code"][0]
    now = clock.epoch()
    monkeypatch.setattr(clock, "epoch", lambda: now + 601)
    assert exchange(env, code, verifier).json()["error"] == "invalid_grant"


@pytest.mark.parametrize(
    ("form", "error", "status"),
    [
        ({"grant_type": "password"}, "unsupported_grant_type", 400),
        (
            {"grant_type": "authorization_code", "client_id": "evil", "code": "x", "code_verifier": "y"},
            "invalid_client",
            401,
        ),
        ({"grant_type": "authorization_code"}, "invalid_request", 400),
        (
            {"grant_type": "authorization_code", "code": "nope", "code_verifier": "y" * 43, "redirect_uri": REDIRECT},
            "invalid_grant",
            400,
        ),
    ],
)
def test_bad_token_requests_get_oauth_errors(env: Env, form: dict[str, str], error: str, status: int) -> None:
    r = browser(env).post("/oauth/token", data=form)
    assert r.status_code == status and r.json()["error"] == error


def test_declining_sends_access_denied_and_issues_nothing(env: Env) -> None:
    before = len(env.container.accounts.list_tokens(env.principal.subject_id))
    query = approve(env, signed_in(env), pkce()[1], decision="deny")
    assert query["error"] == ["access_denied"] and "code" not in query
    assert len(env.container.accounts.list_tokens(env.principal.subject_id)) == before


@pytest.mark.parametrize(
    ("redirect", "extra"),
    [
        ("https://evil.example/login", {}),
        ("http://localhost:8080/login", {}),
        ("http://localhost:10001/elsewhere", {}),
        ("http://localhost:10001@evil.example:10001/login", {}),
        (REDIRECT, {"client_id": "someone-else"}),
        (REDIRECT, {"code_challenge_method": "plain"}),
        (REDIRECT, {"state": ""}),
    ],
)
def test_a_bad_request_is_a_400_page_that_redirects_nowhere(env: Env, redirect: str, extra: dict[str, str]) -> None:
    r = signed_in(env).get(authorize_url(pkce()[1], redirect, **extra))
    assert r.status_code == 400 and "location" not in r.headers


def test_approval_needs_the_session_csrf_token(env: Env) -> None:
    client = signed_in(env)
    fields = hidden_fields(client.get(authorize_url(pkce()[1])).text)
    fields["csrf_token"] = "forged"
    r = client.post("/app/oauth/authorize", data={**fields, "decision": "approve"})
    assert r.status_code == 403


@pytest.mark.parametrize("target", ["//evil.example/app/", "https://evil.example/app/x", "/app\\@evil", "/elsewhere"])
def test_sign_in_never_redirects_off_the_ui(target: str) -> None:
    assert local_next(target) == "/app"


@pytest.mark.parametrize(
    "redirect",
    [
        "http://user@localhost:10001/login",  # userinfo
        "http://user:pw@localhost:10001/login",
        "http://localhost:10001\\@evil.example/login",  # a backslash some parsers read as a path
        "http://localhost:10001/login\\..",
        "http://localhost:10001/login\t",  # control characters
        "http://local\nhost:10001/login",
        "http://localhost:10001/login\r\nSet-Cookie: x=y",
        "http://localhost:10001/login\x00",
        "http://localhost:10001/login?x=1",  # not what a CLI sends
        "http://localhost:10001/login#frag",
        "http://localhost:010001/login",
        "http://localhost:１0001/login",  # a non-ASCII digit
        "http://localhost:10011/login",
    ],
)
def test_a_redirect_uri_with_userinfo_backslash_or_control_characters_is_refused(env: Env, redirect: str) -> None:
    r = signed_in(env).get(authorize_url(pkce()[1], redirect))
    assert r.status_code == 400 and "location" not in r.headers


@pytest.mark.parametrize("redirect", ["http://localhost:10000/login", "http://127.0.0.1:10010/login"])
def test_the_clis_own_redirect_uris_are_accepted(env: Env, redirect: str) -> None:
    assert signed_in(env).get(authorize_url(pkce()[1], redirect)).status_code == 200


@pytest.mark.parametrize("challenge", ["a" * 42, "a" * 44, "a" * 42 + "=", "é" * 43, "a" * 42 + "+"])
def test_a_challenge_that_no_s256_verifier_gives_is_refused(env: Env, challenge: str) -> None:
    r = signed_in(env).get(authorize_url(challenge))
    assert r.status_code == 400 and "location" not in r.headers


def test_the_token_endpoint_requires_the_redirect_uri_and_keeps_the_code_without_it(env: Env) -> None:
    verifier, challenge = pkce()
    code = approve(env, signed_in(env), challenge)["code"][0]
    form = {"grant_type": "authorization_code", "code": code, "code_verifier": verifier, "client_id": "terraform-cli"}
    r = browser(env).post("/oauth/token", data=form)
    assert r.status_code == 400 and r.json()["error"] == "invalid_request" and "redirect_uri" in r.text
    assert exchange(env, code, verifier).status_code == 200  # a malformed request spent nothing


@pytest.mark.parametrize("verifier", ["v" * 42, "v" * 129, "é" * 43, "v" * 42 + " ", "v" * 42 + "+"])
def test_a_verifier_outside_rfc_7636_is_an_invalid_request(env: Env, verifier: str) -> None:
    _, challenge = pkce()
    code = approve(env, signed_in(env), challenge)["code"][0]
    r = exchange(env, code, verifier)
    assert r.status_code == 400 and r.json()["error"] == "invalid_request"
