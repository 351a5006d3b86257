"""The web UI against hostile browsers and pages: malformed cookies and CSRF tokens (4xx or signed out, never a
500), login CSRF from another site, session cookies signed for their purpose only."""

from __future__ import annotations

import hashlib
import hmac

import pytest
from fastapi.testclient import TestClient
from state_helpers import Env, make_env
from terrace.web.app import create_app
from ui_helpers import sign_in, sign_in_token


@pytest.fixture
def env() -> Env:
    return make_env()


def browser(env: Env) -> TestClient:
    return TestClient(create_app(env.container), base_url="https://testserver", follow_redirects=False)


def signed_in(env: Env) -> TestClient:
    client = browser(env)
    assert sign_in(client, env.token).status_code == 303
    return client


@pytest.mark.parametrize("value", ["é", "abc.é", "é.é", "\u00ff" * 70, "x.y.z", "."])
def test_a_non_ascii_or_malformed_session_cookie_is_signed_out_not_a_500(env: Env, value: str) -> None:
    client = browser(env)
    for path in ("/app", "/app/nope/workspaces", "/app/oauth/authorize"):
        r = client.get(path, headers={"cookie": f"terrace_session={value}".encode()})
        assert r.status_code in (303, 400, 404), (path, r.status_code)
    posted = client.post("/app/sign-out", headers={"cookie": f"terrace_session={value}".encode()})
    assert posted.status_code == 303 and posted.headers["location"] == "/app/sign-in"


@pytest.mark.parametrize("token", ["é", "ü" * 43, "\ud800", "x" * 10_000])
def test_a_non_ascii_csrf_token_is_a_403_not_a_500(env: Env, token: str) -> None:
    client = signed_in(env)
    body = "csrf_token=" + "".join(f"%{b:02X}" for b in token.encode("utf-8", "surrogatepass"))
    form = {"content-type": "application/x-www-form-urlencoded"}
    assert client.post("/app/sign-out", content=body, headers=form).status_code == 403
    assert client.post("/app/acme/workspaces/new", content=body + "&name=web", headers=form).status_code == 403
    assert env.container.workspaces.find_id("acme", "web") is None
    assert client.get("/app").status_code == 200  # still signed in


def test_a_non_ascii_sign_in_csrf_token_is_refused_not_a_500(env: Env) -> None:
    client = browser(env)
    client.get("/app/sign-in")
    r = client.post("/app/sign-in", data={"token": env.token, "csrf_token": "é"})
    assert r.status_code == 403 and "terrace_session" not in r.headers.get("set-cookie", "")
    r = client.post(
        "/app/sign-in",
        data={"token": env.token, "csrf_token": "abc"},
        headers={"cookie": "terrace_sign_in_csrf=é".encode()},
    )
    assert r.status_code == 403 and "terrace_session" not in r.headers.get("set-cookie", "")


def test_sign_in_needs_the_forms_token_from_its_pre_session_cookie(env: Env) -> None:
    client = browser(env)
    page = client.get("/app/sign-in")
    cookie = page.headers["set-cookie"].lower()
    assert "terrace_sign_in_csrf=" in cookie and "samesite=strict" in cookie and "secure" in cookie
    token = sign_in_token(page.text)
    for data in ({"token": env.token}, {"token": env.token, "csrf_token": "x" * 43}):
        r = client.post("/app/sign-in", data=data)
        assert r.status_code == 403 and 'role="alert"' in r.text
        assert "terrace_session" not in r.headers.get("set-cookie", "")
    stranger = browser(env)  # the attacker's own form token, without the victim's cookie
    r = stranger.post("/app/sign-in", data={"token": env.token, "csrf_token": token})
    assert r.status_code == 403 and "terrace_session" not in r.headers.get("set-cookie", "")
    r = client.post("/app/sign-in", data={"token": env.token, "csrf_token": token})
    assert r.status_code == 303 and "terrace_session=" in r.headers["set-cookie"]


def test_a_second_sign_in_page_keeps_the_first_forms_token(env: Env) -> None:
    client = browser(env)
    first = sign_in_token(client.get("/app/sign-in").text)
    assert sign_in_token(client.get("/app/sign-in").text) == first  # two tabs: both forms work


@pytest.mark.parametrize(
    "headers",
    [
        {"origin": "https://evil.example"},
        {"origin": "null"},
        {"origin": "https://testserver.evil.example"},
        {"origin": "http://[::1"},  # unparseable
        {"referer": "https://evil.example/app/sign-in"},
        {"origin": "https://evil.example", "referer": "https://testserver/app/sign-in"},
    ],
)
def test_a_sign_in_posted_from_another_site_sets_no_session(env: Env, headers: dict[str, str]) -> None:
    client = browser(env)
    token = sign_in_token(client.get("/app/sign-in").text)
    r = client.post("/app/sign-in", data={"token": env.token, "csrf_token": token}, headers=headers)
    assert r.status_code == 403 and "another site" in r.text
    assert "terrace_session" not in r.headers.get("set-cookie", "")


@pytest.mark.parametrize(
    "headers",
    [
        {"origin": "https://testserver"},
        {"origin": "https://localhost:8443"},  # the public URL (a proxy in front: the Host differs)
        {"referer": "https://testserver/app/sign-in?next=/app/acme"},
    ],
)
def test_a_sign_in_from_this_servers_own_page_works(env: Env, headers: dict[str, str]) -> None:
    assert env.container.settings.public_url == "https://localhost:8443"
    client = browser(env)
    token = sign_in_token(client.get("/app/sign-in").text)
    r = client.post("/app/sign-in", data={"token": env.token, "csrf_token": token}, headers=headers)
    assert r.status_code == 303, r.text


def test_a_session_cookie_is_signed_for_sessions_only(env: Env) -> None:
    """A bare HMAC of the session id under the URL-signing secret (the old cookie format, and what a signed URL
    of the same secret could be made to carry) is no session cookie."""
    client = signed_in(env)
    value = client.cookies.get("terrace_session")
    assert value
    session_id = value.rsplit(".", 1)[0]
    secret = env.container.settings.url_signing_secret.encode()
    bare = hmac.new(secret, session_id.encode(), hashlib.sha256).hexdigest()
    forged = browser(env)
    assert forged.get("/app", headers={"cookie": f"terrace_session={session_id}.{bare}"}).status_code == 303
    assert forged.get("/app", headers={"cookie": f"terrace_session={value}"}).status_code == 200


def test_the_page_that_shows_a_new_token_is_never_stored(env: Env) -> None:
    client = signed_in(env)
    page = client.get("/app/account/tokens")
    csrf = sign_in_token(page.text)  # the first CSRF field of the page: the session's
    posted = client.post("/app/account/tokens", data={"description": "ci", "csrf_token": csrf})
    assert posted.status_code == 303 and posted.headers["cache-control"] == "no-store"
    assert "terrace_new_token" in posted.headers["set-cookie"] and "httponly" in posted.headers["set-cookie"].lower()
    r = client.get("/app/account/tokens")  # the redirect's page shows the secret, once
    assert r.status_code == 200 and 'id="new-token"' in r.text
    assert r.headers["cache-control"] == "no-store"
    again = client.get("/app/account/tokens")
    assert 'id="new-token"' not in again.text and "no-store" not in again.headers.get("cache-control", "")
