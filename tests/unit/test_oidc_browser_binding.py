"""Single sign-on is bound to the browser that started it (a callback URL of another sign-in signs nobody in), its
unauthenticated start is rate-limited per address, and a single sign-on session re-reads its user on every request.
Against the same real OpenID Connect provider as `test_oidc_sign_in.py`."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
import test_oidc_sign_in as base
from fastapi.testclient import TestClient
from table_items import memory_items
from terrace.domain.principal import Principal, PrincipalKind
from terrace.web.rate_limit import TokenBuckets
from terrace.web.ui.oidc import BROWSER_COOKIE, START_BURST, START_PER_S, StartLimit

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
issuer, app, person, sign_in = base.issuer, base.app, base.person, base.sign_in


def browser(client: TestClient, address: str = "testclient") -> TestClient:
    return TestClient(client.app, base_url="https://testserver", follow_redirects=False, client=(address, 50000))


def callback_url(client: TestClient, sub: str) -> str:
    """Start a sign-in in `client` and approve it at the provider as `sub`; the callback URL, not yet opened."""
    start = client.get("/app/sign-in/oidc")
    assert start.status_code == 303
    approved = httpx.post(start.headers["location"], data={"sub": sub})
    back = urlsplit(approved.headers["location"])
    return f"{back.path}?{back.query}"


def states(container: Any) -> int:
    return sum(1 for key in memory_items(container.table) if key[1] == "state")


def test_an_attackers_callback_signs_no_victim_in(app: tuple[Any, TestClient], issuer: str) -> None:
    container, attacker = app
    person(issuer, "sub-mallory", preferred_username="mallory")
    forced = callback_url(attacker, "sub-mallory")

    victim = browser(attacker)
    r = victim.get(forced)  # e.g. an <img> or a link on the attacker's page
    assert r.status_code == 400 and "terrace_session" not in r.headers.get("set-cookie", "")
    assert "not started in this browser" in r.text and "<form" in r.text
    assert victim.get("/app").headers["location"] == "/app/sign-in"
    assert container.accounts.find_user("mallory") is None  # nothing was exchanged or created

    assert attacker.get(forced).status_code == 303  # refused elsewhere, the state stayed for its own browser


def test_a_callback_with_another_sign_ins_cookie_is_refused_and_that_sign_in_still_works(
    app: tuple[Any, TestClient], issuer: str
) -> None:
    _, attacker = app
    person(issuer, "sub-mallory2", preferred_username="mallory2")
    person(issuer, "sub-victor", preferred_username="victor")
    forced = callback_url(attacker, "sub-mallory2")
    victim = browser(attacker)
    own = callback_url(victim, "sub-victor")  # the victim is signing in too: the cookie is theirs

    r = victim.get(forced)
    assert r.status_code == 400 and "another browser" in r.text
    assert "terrace_session" not in r.headers.get("set-cookie", "")
    assert victim.get(own).status_code == 303
    assert "victor" in victim.get("/app/account/tokens").text


def test_the_binding_cookie_is_short_lived_and_scoped_to_the_callback(app: tuple[Any, TestClient], issuer: str) -> None:
    _, client = app
    person(issuer, "sub-wendy", preferred_username="wendy")
    start = client.get("/app/sign-in/oidc")
    cookie = start.headers["set-cookie"]
    assert cookie.startswith(f"{BROWSER_COOKIE}=")
    for attribute in ("HttpOnly", "Secure", "SameSite=lax", "Path=/app/sign-in/oidc/callback", "Max-Age=600"):
        assert attribute in cookie
    approved = httpx.post(start.headers["location"], data={"sub": "sub-wendy"})
    back = urlsplit(approved.headers["location"])
    done = client.get(f"{back.path}?{back.query}")
    assert done.status_code == 303
    assert any(c.startswith(f'{BROWSER_COOKIE}=""') for c in done.headers.get_list("set-cookie"))  # spent
    assert client.get(f"{back.path}?{back.query}").status_code == 401  # replay: already used


def test_the_start_is_rate_limited_per_address(app: tuple[Any, TestClient]) -> None:
    container, client = app
    now = [1000.0]
    client.app.state.oidc_start_limit = StartLimit(TokenBuckets(START_PER_S, lambda: now[0], burst=START_BURST))
    for _ in range(START_BURST):
        assert client.get("/app/sign-in/oidc").status_code == 303
    written = states(container)

    limited = client.get("/app/sign-in/oidc")
    assert limited.status_code == 429 and "Too many sign-ins" in limited.text
    assert limited.headers["content-type"].startswith("text/html") and int(limited.headers["retry-after"]) >= 1
    assert states(container) == written  # no row for a refused start
    assert browser(client, "203.0.113.9").get("/app/sign-in/oidc").status_code == 303  # another address

    now[0] += 1 / START_PER_S
    assert client.get("/app/sign-in/oidc").status_code == 303


def test_a_single_sign_on_session_re_reads_suspension_and_site_admin(app: tuple[Any, TestClient], issuer: str) -> None:
    container, client = app
    owner = container.accounts.create_user("olga")
    container.organizations.create(Principal(PrincipalKind.USER, owner.id, owner.username), "acme", "o@example.com")
    person(issuer, "sub-sam", preferred_username="sam")
    assert sign_in(client, "sub-sam").status_code == 303
    sam = container.accounts.find_user("sam")
    container.users.set_flags(sam.id, site_admin=True)  # granted after this session began: seen at once
    assert client.get("/app/acme/workspaces").status_code == 200

    item = container.table.get(sam.id, "user")
    container.table.put({**item, "site_admin": False})  # the right alone, without deleting the sessions
    assert client.get("/app/acme/workspaces").status_code == 404
    assert client.get("/app/account/tokens").status_code == 200  # still signed in, as a plain user

    later = browser(client)
    assert sign_in(later, "sub-sam").status_code == 303
    container.users.set_flags(sam.id, suspended=True)
    assert later.get("/app/account/tokens").headers["location"] == "/app/sign-in?next=%2Fapp%2Faccount%2Ftokens"
    assert [
        i for i in memory_items(container.table).values() if i["sk"] == "session" and i["subject_id"] == sam.id
    ] == []
