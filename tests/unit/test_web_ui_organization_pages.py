"""The organization pages of the web UI (settings, teams, projects, team access) answer what is hidden as the
same 404 HTML page as what is absent, keep a team or project under its own organization's address, refuse a
form without the session's CSRF token, and show refusals on the page they came from (HTML, never JSON)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from state_helpers import Env, make_env, other_user
from terrace.domain.errors import Unauthenticated
from terrace.domain.principal import PrincipalKind
from test_web_ui import browser, csrf_of, signed_in
from ui_helpers import sign_in


@pytest.fixture
def env() -> Env:
    return make_env()


def _pages(env: Env) -> dict[str, str]:
    team = env.container.teams.create(env.principal, "acme", {"name": "devs"})
    project = env.container.projects.create(env.principal, "acme", {"name": "platform"})
    return {
        "settings": "/app/acme/settings",
        "teams": "/app/acme/teams",
        "team": f"/app/acme/teams/{team.id}",
        "projects": "/app/acme/projects",
        "project": f"/app/acme/projects/{project.id}",
        "access": "/app/acme/workspaces/prod/access",
    }


def _as(env: Env, token: str) -> TestClient:
    client = browser(env)
    assert sign_in(client, token).status_code == 303
    return client


def test_a_stranger_gets_the_not_found_page_for_every_organization_page(env: Env) -> None:
    pages = _pages(env)
    mallory = _as(env, other_user(env)[0])
    for name, path in pages.items():
        hidden = mallory.get(path)
        assert hidden.status_code == 404, name
        assert hidden.headers["content-type"].startswith("text/html") and '"errors"' not in hidden.text, name
    # the same words for a hidden organization and one that does not exist
    assert mallory.get("/app/acme/teams").text.replace("acme", "X") == mallory.get("/app/nope/teams").text.replace(
        "nope", "X"
    )


def test_a_team_or_project_is_not_found_under_another_organizations_address(env: Env) -> None:
    pages = _pages(env)
    env.container.organizations.create(env.principal, "acme2", "ops@example.com")
    client = signed_in(env)  # owns both organizations
    for name in ("team", "project"):
        assert client.get(pages[name]).status_code == 200
        assert client.get(pages[name].replace("/app/acme/", "/app/acme2/")).status_code == 404, name
        assert client.get(pages[name] + "x").status_code == 404, name


def test_a_member_without_access_sees_404_for_team_access_and_a_refusal_on_the_page(env: Env) -> None:
    _pages(env)
    user = env.container.accounts.create_user("bob", "bob@example.com")
    env.container.memberships.ensure(env.container.organizations.lookup("acme").key, user)
    bob = _as(env, env.container.accounts.issue_token(PrincipalKind.USER, user.id).secret)
    assert bob.get("/app/acme/workspaces/prod/access").status_code == 404  # cannot read the workspace
    page = bob.get("/app/acme/settings")
    assert page.status_code == 200 and "Only the organization's owners can change" in page.text
    refused = bob.post("/app/acme/settings", data={"name": "acme", "email": "x@example.com",
                                                   "csrf_token": csrf_of(page.text)})  # fmt: skip
    assert refused.status_code == 403 and 'role="alert"' in refused.text and '"errors"' not in refused.text
    assert env.container.organizations.lookup("acme").email != "x@example.com"


def test_forms_need_the_sessions_csrf_token(env: Env) -> None:
    pages = _pages(env)
    client = signed_in(env)
    for path in (pages["settings"], pages["teams"], pages["projects"], pages["team"] + "/members"):
        assert client.post(path, data={"name": "x", "email": "a@b.c", "user": "alice"}).status_code == 403, path
    assert [t.name for t in env.container.teams.list(env.principal, "acme")] == ["devs", "owners"]
    assert env.container.organizations.lookup("acme").email != "a@b.c"


@pytest.mark.parametrize("how", ["api", "ui"])
def test_a_deleted_teams_token_dies_with_it(env: Env, how: str) -> None:
    pages = _pages(env)
    team_id = pages["team"].rsplit("/", 1)[1]
    issued = env.container.team_tokens.create_legacy(env.principal, team_id)
    assert env.container.accounts.authenticate(issued.secret).subject_id == team_id
    if how == "api":
        assert env.client.delete(f"/api/v2/teams/{team_id}", headers=env.auth).status_code == 204
    else:
        client = signed_in(env)
        token = csrf_of(client.get(pages["team"]).text)
        assert client.post(pages["team"] + "/delete", data={"csrf_token": token}).status_code == 303
    with pytest.raises(Unauthenticated):
        env.container.accounts.authenticate(issued.secret)
