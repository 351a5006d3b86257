"""Single sign-on to the web UI against a real OpenID Connect provider started in the test (oidc-provider-mock:
discovery, JWKS, authorization-code flow with PKCE, RS256-signed ID tokens)."""

from __future__ import annotations

import html
import re
import time
import warnings
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi.testclient import TestClient
from table_items import memory_items
from terrace.bootstrap import build_memory
from terrace.config import Settings
from terrace.domain.errors import Unauthenticated
from terrace.web.app import create_app

with warnings.catch_warnings():  # the provider's own dependencies warn about their deprecations
    warnings.simplefilter("ignore")
    import oidc_provider_mock

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def issuer() -> Iterator[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with oidc_provider_mock.run_server_in_thread(require_nonce=True) as server:
            yield f"http://localhost:{server.server_port}"


@pytest.fixture
def app(issuer: str) -> tuple[Any, TestClient]:
    settings = Settings(
        table_name="memory",
        blob_bucket="memory",
        url_signing_secret="test-secret",
        public_url="https://testserver",
        oidc_issuer=issuer,
        oidc_client_id="terrace",
        oidc_client_secret="s3cret",
    )
    container = build_memory(settings)
    return container, TestClient(create_app(container), base_url="https://testserver", follow_redirects=False)


def person(issuer: str, sub: str, **claims: Any) -> None:
    assert httpx.put(f"{issuer}/users/{quote(sub, safe='')}", json=claims).status_code == 204


def sign_in(client: TestClient, sub: str, next_page: str = "") -> httpx.Response:
    """Start at Terrace, approve at the provider as `sub`, come back: Terrace's answer to the callback."""
    start = client.get("/app/sign-in/oidc" + (f"?next={quote(next_page, safe='')}" if next_page else ""))
    assert start.status_code == 303
    authorize = start.headers["location"]
    query = parse_qs(urlsplit(authorize).query)
    assert query["code_challenge_method"] == ["S256"] and query["nonce"] and query["state"]
    approved = httpx.post(authorize, data={"sub": sub})
    assert approved.status_code in (302, 303), approved.text
    back = urlsplit(approved.headers["location"])
    assert back.path == "/app/sign-in/oidc/callback"
    return client.get(f"{back.path}?{back.query}")


def test_first_sign_in_creates_the_user_and_the_next_one_finds_them(app: tuple[Any, TestClient], issuer: str) -> None:
    container, client = app
    person(issuer, "sub-alice-1", preferred_username="alice", email="alice@example.com", groups=["platform", "ops"])
    r = sign_in(client, "sub-alice-1", next_page="/app/account/tokens")
    assert r.status_code == 303 and r.headers["location"] == "/app/account/tokens"
    assert "terrace_session" in r.headers["set-cookie"] and "HttpOnly" in r.headers["set-cookie"]
    page = client.get("/app/account/tokens")
    assert page.status_code == 200 and "alice" in page.text
    user = container.accounts.find_user("alice")
    assert user is not None and user.email == "alice@example.com"

    again = TestClient(client.app, base_url="https://testserver", follow_redirects=False)
    assert sign_in(again, "sub-alice-1").status_code == 303
    assert container.accounts.find_user("alice").id == user.id  # matched by subject, not created twice
    links = [i for k, i in memory_items(container.table).items() if k[1] == "link"]
    assert links and links[0]["groups"] == ["platform", "ops"]


def test_people_are_matched_by_subject_never_by_name(app: tuple[Any, TestClient], issuer: str) -> None:
    container, client = app
    person(issuer, "sub-bob-1", preferred_username="bob")
    person(issuer, "sub-bob-2", preferred_username="bob")
    assert sign_in(client, "sub-bob-1").status_code == 303
    other = TestClient(client.app, base_url="https://testserver", follow_redirects=False)
    assert sign_in(other, "sub-bob-2").status_code == 303
    first = container.accounts.find_user("bob")
    second_page = other.get("/app/account/tokens").text
    assert first is not None and "bob-" in second_page  # a second person named bob gets a name of their own


def test_a_callback_works_once_and_only_with_its_state(app: tuple[Any, TestClient], issuer: str) -> None:
    _, client = app
    person(issuer, "sub-carol", preferred_username="carol")
    start = client.get("/app/sign-in/oidc")
    approved = httpx.post(start.headers["location"], data={"sub": "sub-carol"})
    back = urlsplit(approved.headers["location"])
    forged = {k: v[0] for k, v in parse_qs(back.query).items()} | {"state": "forged"}
    r = client.get(back.path, params=forged)
    assert r.status_code == 401 and "terrace_session" not in r.headers.get("set-cookie", "")
    assert client.get(f"{back.path}?{back.query}").status_code == 303
    replay = client.get(f"{back.path}?{back.query}")
    assert replay.status_code == 401 and "already used" in replay.text


def test_a_session_ends_when_its_user_is_deleted(app: tuple[Any, TestClient], issuer: str) -> None:
    container, client = app
    person(issuer, "sub-dave", preferred_username="dave")
    assert sign_in(client, "sub-dave").status_code == 303
    assert client.get("/app/account/tokens").status_code == 200
    container.table.delete(container.accounts.find_user("dave").id, "user")
    assert client.get("/app/account/tokens").headers["location"] == "/app/sign-in?next=%2Fapp%2Faccount%2Ftokens"


def test_a_suspended_user_is_signed_out_and_cannot_sign_in(app: tuple[Any, TestClient], issuer: str) -> None:
    container, client = app
    person(issuer, "sub-erin", preferred_username="erin")
    assert sign_in(client, "sub-erin").status_code == 303
    item = container.table.get(container.accounts.find_user("erin").id, "user")
    container.table.put({**item, "suspended": True})
    assert client.get("/app/account/tokens").headers["location"] == "/app/sign-in?next=%2Fapp%2Faccount%2Ftokens"
    again = sign_in(TestClient(client.app, base_url="https://testserver", follow_redirects=False), "sub-erin")
    assert again.status_code == 401 and "suspended" in again.text


def test_an_id_token_signed_by_another_key_is_refused(app: tuple[Any, TestClient], issuer: str) -> None:
    container, _ = app
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = int(time.time())
    claims = {"iss": issuer, "aud": "terrace", "sub": "x", "iat": now, "exp": now + 60, "nonce": "n"}
    forged = jwt.encode(claims, key, algorithm="RS256", headers={"kid": "not-the-issuers"})
    with pytest.raises(Unauthenticated, match="key"):
        container.oidc._verified(forged, "n")


def test_without_an_issuer_there_is_no_sso(app: tuple[Any, TestClient]) -> None:
    container, _ = app
    plain = build_memory(container.settings.replace(oidc_issuer=None))
    client = TestClient(create_app(plain), base_url="https://testserver", follow_redirects=False)
    assert client.get("/app/sign-in/oidc").status_code == 404
    assert "single sign-on" not in client.get("/app/sign-in").text
    assert "single sign-on" in TestClient(create_app(container), base_url="https://testserver").get("/app/sign-in").text


def test_groups_claim_maps_people_into_teams_with_that_sso_team_id(app: tuple[Any, TestClient], issuer: str) -> None:
    """A team whose sso-team-id is a group of the person gets them at sign-in (with a membership of its
    organization), and loses them at the first sign-in without that group."""
    from terrace.domain.principal import Principal, PrincipalKind

    container, client = app
    owner = container.accounts.create_user("olivia")
    principal = Principal(PrincipalKind.USER, owner.id, owner.username)
    container.organizations.create(principal, "acme", "ops@example.com")
    ws = container.workspaces.create(principal, "acme", {"name": "web"})
    team = container.teams.create(principal, "acme", {"name": "platform", "sso-team-id": "platform-admins"})
    grant = {"access": "write"}
    container.team_access.add_workspace(principal, team.id, ws.id, grant)
    untouched = container.teams.create(principal, "acme", {"name": "manual"})

    person(issuer, "sub-pat", preferred_username="pat", groups=["platform-admins", "other"])
    assert sign_in(client, "sub-pat").status_code == 303
    pat = container.accounts.find_user("pat")
    assert pat is not None and pat.id in container.teams.load(team.id).users
    assert pat.id not in container.teams.load(untouched.id).users
    assert [m.user_id for m in container.memberships.list(principal, "acme") if m.user_id == pat.id]
    assert client.get("/app/acme/workspaces/web").status_code == 200

    person(issuer, "sub-pat", preferred_username="pat", groups=["other"])
    later = TestClient(client.app, base_url="https://testserver", follow_redirects=False)
    assert sign_in(later, "sub-pat").status_code == 303
    assert pat.id not in container.teams.load(team.id).users
    assert later.get("/app/acme/workspaces/web").status_code == 404  # no cache: gone at the next request


def test_a_deep_link_survives_single_sign_on_and_only_to_this_ui(app: tuple[Any, TestClient], issuer: str) -> None:
    container, client = app
    person(issuer, "sub-dora", preferred_username="dora")
    asked = client.get("/app/dora-org/workspaces?search=web")  # a link opened while signed out
    assert asked.status_code == 303
    sign_in_page = client.get(asked.headers["location"]).text
    sso = re.search(r'href="(/app/sign-in/oidc\?next=[^"]+)"', sign_in_page)
    assert sso, "the single sign-on link carries the deep link"
    next_page = parse_qs(urlsplit(html.unescape(sso.group(1))).query)["next"][0]
    assert next_page == "/app/dora-org/workspaces?search=web"
    back = sign_in(client, "sub-dora", next_page=next_page)
    assert back.status_code == 303 and back.headers["location"] == "/app/dora-org/workspaces?search=web"
    for target in ("//evil.example/app/", "https://evil.example/app/", "/\\evil.example", "/app/\\evil"):
        fresh = TestClient(client.app, base_url="https://testserver", follow_redirects=False)
        assert sign_in(fresh, "sub-dora", next_page=target).headers["location"] == "/app", target
