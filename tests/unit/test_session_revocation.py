"""A suspension or a revoked site-admin right counts from the next request, for web sessions made before it as much
as for API tokens, and nothing a suspended user could mint starts working when they are unsuspended."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi.testclient import TestClient
from state_helpers import Env, make_env
from table_items import memory_items
from terrace.domain.errors import Conflict
from terrace.domain.principal import PrincipalKind
from terrace.web.app import create_app
from test_terraform_login import approve, exchange, pkce
from ui_helpers import sign_in


@pytest.fixture
def env() -> Env:
    return make_env()


def admin_headers(env: Env, name: str) -> dict[str, str]:
    """A new site admin's API token headers."""
    admin = env.container.accounts.create_user(name, site_admin=True)
    secret = env.container.accounts.issue_token(PrincipalKind.USER, admin.id).secret
    return {"Authorization": f"Bearer {secret}", "Content-Type": "application/vnd.api+json"}


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}", "Content-Type": "application/vnd.api+json"}


def browser(env: Env, token: str) -> TestClient:
    client = TestClient(create_app(env.container), base_url="https://testserver", follow_redirects=False)
    assert sign_in(client, token).status_code == 303
    return client


def csrf_of(client: TestClient) -> str:
    page = client.get("/app/account/tokens")
    assert page.status_code == 200
    match = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
    assert match
    return match.group(1)


def sessions_of(env: Env, user_id: str) -> list[dict[str, Any]]:
    return [
        i for i in memory_items(env.container.table).values() if i["sk"] == "session" and i["subject_id"] == user_id
    ]


def action(env: Env, headers: dict[str, str], user_id: str, name: str) -> None:
    r = env.client.post(f"/api/v2/admin/users/{user_id}/actions/{name}", headers=headers)
    assert r.status_code == 200, r.text


def test_a_suspended_users_ui_session_and_api_tokens_stop_at_the_next_request(env: Env) -> None:
    alice = env.principal.subject_id
    ui = browser(env, env.token)
    csrf = csrf_of(ui)
    assert env.client.get("/api/v2/account/details", headers=bearer(env.token)).status_code == 200
    tokens_before = len(env.container.accounts.list_tokens(alice))

    action(env, admin_headers(env, "root"), alice, "suspend")

    assert env.client.get("/api/v2/account/details", headers=bearer(env.token)).status_code == 401
    minted = ui.post("/app/account/tokens", data={"description": "for later", "csrf_token": csrf})
    assert minted.status_code == 303 and minted.headers["location"] == "/app/sign-in"
    created = ui.post("/app/acme/workspaces/new", data={"name": "sneaky", "csrf_token": csrf})
    assert created.status_code == 303 and created.headers["location"] == "/app/sign-in"
    assert len(env.container.accounts.list_tokens(alice)) == tokens_before
    assert [w.name for w in env.container.workspaces.list(env.principal, "acme")] == ["prod"]
    assert sessions_of(env, alice) == []  # deleted by the suspension
    assert sign_in(ui, env.token).status_code == 401


def test_a_session_re_reads_its_user_even_when_its_record_was_not_deleted(env: Env) -> None:
    """The re-read alone stops it: a suspension written without the sessions' deletion (as a lagging index of
    sessions would leave one) still ends the session at the next request."""
    ui = browser(env, env.token)
    item = env.container.table.get(env.principal.subject_id, "user")
    env.container.table.put({**item, "suspended": True})
    env.container.accounts.refresh_lookups(env.container.accounts.get_user(env.principal.subject_id))
    assert sessions_of(env, env.principal.subject_id)  # still there
    assert ui.get("/app/account/tokens").headers["location"] == "/app/sign-in?next=%2Fapp%2Faccount%2Ftokens"
    assert (
        ui.get("/app/account/tokens").headers["location"].startswith("/app/sign-in")
    )  # every time: reads never write,
    assert sessions_of(env, env.principal.subject_id)  # so the dead session's record is left to its expiry


def test_a_revoked_site_admin_loses_admin_reach_at_the_next_request(env: Env) -> None:
    root = env.container.accounts.create_user("root", site_admin=True)
    root_token = env.container.accounts.issue_token(PrincipalKind.USER, root.id).secret
    ui = browser(env, root_token)
    assert ui.get("/app/acme/workspaces/prod").status_code == 200  # a site admin reaches every organization
    assert env.client.get("/api/v2/admin/users", headers=bearer(root_token)).status_code == 200

    action(env, admin_headers(env, "boss"), root.id, "revoke_admin")

    assert env.client.get("/api/v2/admin/users", headers=bearer(root_token)).status_code == 404
    assert (
        ui.get("/app/acme/workspaces/prod").headers["location"] == "/app/sign-in?next=%2Fapp%2Facme%2Fworkspaces%2Fprod"
    )  # the session was deleted
    assert sign_in(ui, root_token).status_code == 303
    assert ui.get("/app/acme/workspaces/prod").status_code == 404


def test_a_session_made_before_a_revocation_is_no_admin_even_if_it_survives(env: Env) -> None:
    root = env.container.accounts.create_user("root", site_admin=True)
    ui = browser(env, env.container.accounts.issue_token(PrincipalKind.USER, root.id).secret)
    assert ui.get("/app/acme/workspaces/prod").status_code == 200
    item = env.container.table.get(root.id, "user")
    env.container.table.put({**item, "site_admin": False})  # written without the sessions' deletion
    env.container.accounts.refresh_lookups(env.container.accounts.get_user(root.id))
    page = ui.get("/app/acme/workspaces/prod")
    assert page.status_code == 404 and "root" in page.text  # still signed in, no longer an admin


def test_a_suspended_user_gets_no_token_by_any_path(env: Env) -> None:
    alice = env.principal.subject_id
    admin = admin_headers(env, "root")
    verifier, challenge = pkce()
    code = approve(env, browser(env, env.token), challenge)["code"][0]  # approved before the suspension
    action(env, admin, alice, "suspend")
    before = len(env.container.accounts.list_tokens(alice))

    body = {"data": {"type": "authentication-tokens", "attributes": {"description": "x"}}}
    own = env.client.post(f"/api/v2/users/{alice}/authentication-tokens", json=body, headers=bearer(env.token))
    assert own.status_code == 401
    by_admin = env.client.post(f"/api/v2/users/{alice}/authentication-tokens", json=body, headers=admin)
    assert by_admin.status_code == 409 and "suspended" in by_admin.json()["errors"][0]["detail"]
    cli = exchange(env, code, verifier)
    assert cli.status_code == 400 and cli.json()["error"] == "invalid_grant" and "suspended" in cli.text
    with pytest.raises(Conflict, match="suspended"):  # `terrace token create --user alice`
        env.container.accounts.issue_token(PrincipalKind.USER, alice)
    assert len(env.container.accounts.list_tokens(alice)) == before

    action(env, admin, alice, "unsuspend")  # only what existed before the suspension works again
    assert env.client.get("/api/v2/account/details", headers=bearer(env.token)).status_code == 200
    assert len(env.container.accounts.list_tokens(alice)) == before
