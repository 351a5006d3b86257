"""Organization-wide resource search in the web UI."""

from __future__ import annotations

import pytest
from state_helpers import Env, make_env, null_resource, other_user, state_bytes
from test_web_ui import browser, signed_in
from ui_helpers import sign_in


@pytest.fixture
def env() -> Env:
    env = make_env()
    env.lock()
    resources = [null_resource("web", "i-0abc123"), null_resource("db", "arn:aws:rds:eu:1:db/main")]
    assert env.push(state_bytes(1, resources=resources), 1).status_code == 201
    env.drain_events()
    return env


def test_search_page_explains_itself_before_a_query(env: Env) -> None:
    page = signed_in(env).get("/app/acme/search")
    assert page.status_code == 200 and "Find any resource" in page.text


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"q": "null_resource.web"}, ["null_resource.web"]),
        ({"q": "i-0abc"}, ["null_resource.web"]),
        ({"q": "arn:aws:rds"}, ["null_resource.db"]),
        ({"type": "null_resource"}, ["null_resource.db", "null_resource.web"]),
        ({"provider": "hashicorp/null"}, ["null_resource.db", "null_resource.web"]),
    ],
)
def test_search_by_address_id_arn_type_and_provider_links_the_workspace(
    env: Env, params: dict[str, str], expected: list[str]
) -> None:
    page = signed_in(env).get("/app/acme/search", params=params).text
    found = sorted(a for a in ("null_resource.db", "null_resource.web") if f"<code>{a}</code>" in page)
    assert found == expected
    assert '<a href="/app/acme/workspaces/prod">prod</a>' in page


def test_no_match_says_so(env: Env) -> None:
    page = signed_in(env).get("/app/acme/search", params={"q": "nothing-like-this"}).text
    assert "No resource matches" in page


def test_another_organizations_user_gets_404(env: Env) -> None:
    token, _ = other_user(env)
    client = browser(env)
    assert sign_in(client, token).status_code == 303
    r = client.get("/app/acme/search", params={"q": "i-0abc"})
    assert r.status_code == 404 and "i-0abc" not in r.text
