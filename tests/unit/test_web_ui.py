"""The web UI's routers through the TestClient: sign-in sessions, CSRF, expiry, and access rules."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi.testclient import TestClient
from state_helpers import Env, make_env, null_resource, other_user, state_bytes
from terrace.domain import clock
from terrace.web.app import create_app
from ui_helpers import sign_in


@pytest.fixture
def env() -> Env:
    return make_env()


def browser(env: Env) -> TestClient:
    return TestClient(create_app(env.container), base_url="https://testserver", follow_redirects=False)


def signed_in(env: Env) -> TestClient:
    client = browser(env)
    r = sign_in(client, env.token)
    assert r.status_code == 303 and r.headers["location"] == "/app"
    return client


def csrf_of(html: str) -> str:
    match = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert match, "page has no CSRF field"
    return match.group(1)


def test_pages_redirect_to_sign_in_without_a_session(env: Env) -> None:
    r = browser(env).get("/app")
    assert r.status_code == 303 and r.headers["location"] == "/app/sign-in"


def test_sign_in_sets_a_secure_http_only_same_site_cookie(env: Env) -> None:
    r = sign_in(browser(env), env.token)
    cookie = r.headers["set-cookie"].lower()
    assert "httponly" in cookie and "secure" in cookie and "samesite=lax" in cookie
    assert env.token not in r.headers["set-cookie"]  # the cookie names a session, never the API token


def test_bad_token_shows_an_inline_error(env: Env) -> None:
    r = sign_in(browser(env), "nope")
    assert (
        r.status_code == 401 and 'role="alert"' in r.text and "terrace_session" not in r.headers.get("set-cookie", "")
    )


def test_signed_in_user_sees_organizations_and_workspaces(env: Env) -> None:
    client = signed_in(env)
    assert "acme" in client.get("/app").text
    page = client.get("/app/acme/workspaces")
    assert page.status_code == 200 and "prod" in page.text
    assert "No workspace matches" in client.get("/app/acme/workspaces", params={"search": "zzz"}).text


def test_forged_cookie_is_not_a_session(env: Env) -> None:
    client = signed_in(env)
    value = client.cookies.get("terrace_session")
    assert value
    session_id, _, _sig = value.partition(".")
    forged = browser(env)
    assert forged.get("/app", headers={"cookie": f"terrace_session={session_id}.{'0' * 64}"}).status_code == 303
    assert forged.get("/app", headers={"cookie": f"terrace_session={value}"}).status_code == 200


def test_sign_out_needs_the_csrf_token_and_ends_the_session(env: Env) -> None:
    client = signed_in(env)
    token = csrf_of(client.get("/app").text)
    cookie = client.cookies.get("terrace_session")
    refused = client.post("/app/sign-out", data={})
    assert refused.status_code == 403
    assert client.get("/app").status_code == 200  # still signed in
    assert client.post("/app/sign-out", data={"csrf_token": "wrong"}).status_code == 403
    r = client.post("/app/sign-out", data={"csrf_token": token})
    assert r.status_code == 303
    replay = browser(env)  # the old cookie no longer names a session on the server
    assert replay.get("/app", headers={"cookie": f"terrace_session={cookie}"}).status_code == 303


def test_session_expires(env: Env, monkeypatch: Any) -> None:
    client = signed_in(env)
    assert client.get("/app").status_code == 200
    later = clock.epoch() + 8 * 3600 + 1
    monkeypatch.setattr(clock, "epoch", lambda: later)
    assert client.get("/app").status_code == 303


def test_other_users_organization_is_a_404_page(env: Env) -> None:
    other_user(env)
    r = signed_in(env).get("/app/evil/workspaces")
    assert r.status_code == 404 and "text/html" in r.headers["content-type"]
    assert "Not found" in r.text


def test_api_errors_stay_json(env: Env) -> None:
    r = env.client.get("/api/v2/organizations/nope", headers=env.auth)
    assert r.status_code in (401, 404) and r.headers["content-type"].startswith("application/vnd.api+json")


def test_create_workspace_from_the_form(env: Env) -> None:
    client = signed_in(env)
    token = csrf_of(client.get("/app/acme/workspaces/new").text)
    assert client.post("/app/acme/workspaces/new", data={"name": "web"}).status_code == 403
    assert env.container.workspaces.find_id("acme", "web") is None
    r = client.post("/app/acme/workspaces/new", data={"name": "web", "tags": "a, b", "csrf_token": token})
    assert r.status_code == 303 and r.headers["location"] == "/app/acme/workspaces/web"
    assert env.container.workspaces.find_id("acme", "web")
    again = client.post("/app/acme/workspaces/new", data={"name": "web", "csrf_token": token})
    assert again.status_code == 422 and 'role="alert"' in again.text and 'id="name-error"' in again.text


def test_overview_masks_sensitive_outputs(env: Env) -> None:
    outputs = {
        "public": {"value": "hello-world", "type": "string"},
        "secret": {"value": "s3cr3t-value", "type": "string", "sensitive": True},
    }

    env.lock()
    empty = signed_in(env).get("/app/acme/workspaces/prod").text
    assert "No outputs yet" in empty and "No resources yet" in empty
    resources = [null_resource("web", "i-0abc")]
    assert env.push(state_bytes(1, outputs=outputs, resources=resources), 1).status_code == 201
    env.drain_events()
    page = signed_in(env).get("/app/acme/workspaces/prod")
    assert page.status_code == 200
    assert "hello-world" in page.text and "s3cr3t-value" not in page.text
    assert "<code>null_resource.web</code>" in page.text and "i-0abc" in page.text


def test_lock_and_unlock_from_the_overview(env: Env) -> None:
    client = signed_in(env)
    token = csrf_of(client.get("/app/acme/workspaces/prod").text)
    assert client.post("/app/acme/workspaces/prod/lock", data={"csrf_token": token}).status_code == 303
    assert env.ws().lock is not None
    assert "Unlock workspace" in client.get("/app/acme/workspaces/prod").text
    assert client.post("/app/acme/workspaces/prod/lock", data={"csrf_token": token}).status_code == 303
    assert env.ws().lock is None


def test_variables_sensitive_values_are_write_only(env: Env) -> None:
    client = signed_in(env)
    url = "/app/acme/workspaces/prod/variables"
    token = csrf_of(client.get(url).text)
    assert client.post(url, data={"key": "x", "value": "1"}).status_code == 403
    assert client.post(url, data={"key": "plain", "value": "visible-1", "csrf_token": token}).status_code == 303
    form = {"key": "secret", "value": "hidden-2", "sensitive": "on", "csrf_token": token}
    assert client.post(url, data=form).status_code == 303
    page = client.get(url).text
    assert "visible-1" in page and "secret" in page and "hidden-2" not in page
    clash = client.post(url, data=form)
    assert clash.status_code == 422 and "hidden-2" not in clash.text and 'role="alert"' in clash.text
    var_id = next(v.id for v in env.container.variables.list(env.principal, env.ws()) if v.key == "plain")
    assert client.post(f"{url}/{var_id}/delete", data={"csrf_token": token}).status_code == 303
    assert [v.key for v in env.container.variables.list(env.principal, env.ws())] == ["secret"]


def test_edit_a_variable_and_keep_a_sensitive_value_write_only(env: Env) -> None:
    client = signed_in(env)
    url = "/app/acme/workspaces/prod/variables"
    token = csrf_of(client.get(url).text)
    plain = env.container.variables.create(
        env.principal, env.ws(), {"key": "region", "value": "eu-west-1", "category": "terraform"}
    )
    secret = env.container.variables.create(
        env.principal, env.ws(), {"key": "db_password", "value": "hunter2", "category": "terraform", "sensitive": True}
    )
    form = client.get(f"{url}/{plain.id}")
    assert form.status_code == 200 and 'value="region"' in form.text and "eu-west-1" in form.text
    edit = {"key": "region", "value": "[1, 2]", "description": "where", "hcl": "on", "csrf_token": token}
    assert client.post(f"{url}/{plain.id}", data={**edit, "csrf_token": ""}).status_code == 403
    assert client.post(f"{url}/{plain.id}", data=edit).status_code == 303
    changed = env.container.variables.get(env.principal, env.ws(), plain.id)
    assert (changed.value, changed.description, changed.hcl, changed.sensitive) == ("[1, 2]", "where", True, False)

    page = client.get(f"{url}/{secret.id}")
    assert page.status_code == 200 and "hunter2" not in page.text and "Leave blank to keep it" in page.text
    kept = client.post(f"{url}/{secret.id}", data={"key": "db_password", "value": "", "csrf_token": token})
    assert kept.status_code == 303
    values = env.container.variables.sensitive_values(env.ws().id).values
    assert values == ("hunter2",) and env.container.variables.get(env.principal, env.ws(), secret.id).sensitive
    replaced = {"key": "db_password", "value": "correct-horse", "csrf_token": token}
    assert client.post(f"{url}/{secret.id}", data=replaced).status_code == 303
    assert env.container.variables.sensitive_values(env.ws().id).values == ("correct-horse",)

    bad = client.post(f"{url}/{secret.id}", data={"key": "not\tvalid!", "value": "leaked?", "csrf_token": token})
    assert bad.status_code == 422 and 'id="key-error"' in bad.text and 'aria-invalid="true"' in bad.text
    assert "leaked?" not in bad.text and "correct-horse" not in bad.text
    clash = client.post(f"{url}/{plain.id}", data={"key": "db_password", "value": "x", "csrf_token": token})
    assert clash.status_code == 422 and "already exists" in clash.text and 'role="alert"' in clash.text
    assert env.container.variables.get(env.principal, env.ws(), plain.id).key == "region"
    listing = client.get(url).text
    assert "where" in listing and "correct-horse" not in listing and "hunter2" not in listing
    assert client.get(f"{url}/var-doesnotexist1234").status_code == 404
    mallory = browser(env)
    assert sign_in(mallory, other_user(env)[0]).status_code == 303
    assert mallory.get(f"{url}/{secret.id}").status_code == 404
    theirs = csrf_of(mallory.get("/app").text)
    assert mallory.post(f"{url}/{plain.id}", data={"key": "x", "csrf_token": theirs}).status_code == 404


def test_create_and_revoke_a_token(env: Env) -> None:
    client = signed_in(env)
    url = "/app/account/tokens"
    token = csrf_of(client.get(url).text)
    assert client.post(url, data={"description": "ci"}).status_code == 403
    made = client.post(url, data={"description": "ci", "csrf_token": token})
    assert made.status_code == 303 and made.headers["location"] == url  # post/redirect/get
    shown = client.get(url)
    assert "terraform login localhost:8443" in shown.text  # the public URL's host and port
    secret = re.search(r'<code id="new-token">([^<]+)</code>', shown.text)
    assert secret
    assert env.container.accounts.authenticate(secret.group(1)).username == "alice"
    ci = next(t for t in env.container.accounts.list_tokens(env.principal.subject_id) if t.description == "ci")
    assert client.post(f"{url}/{ci.id}/revoke", data={"csrf_token": token}).status_code == 303
    assert all(t.id != ci.id for t in env.container.accounts.list_tokens(env.principal.subject_id))


def test_cannot_revoke_someone_elses_token(env: Env) -> None:
    _, mallory = other_user(env)
    theirs = env.container.accounts.issue_token(mallory.kind, mallory.subject_id, description="theirs")
    client = signed_in(env)
    token = csrf_of(client.get("/app/account/tokens").text)
    r = client.post(f"/app/account/tokens/{theirs.token.id}/revoke", data={"csrf_token": token})
    assert r.status_code == 404
    assert env.container.accounts.authenticate(theirs.secret).username == "mallory"


def test_static_files_are_served_in_local_mode(env: Env) -> None:
    client = browser(env)
    htmx = client.get("/static/htmx.min.js")
    assert htmx.status_code == 200 and "htmx" in htmx.text and "javascript" in htmx.headers["content-type"]
    assert client.get("/static/terrace.css").status_code == 200
    assert client.get("/static/../pyproject.toml").status_code == 404
    assert client.get("/static/nope.js").status_code == 404
    page = signed_in(env).get("/app").text
    assert '<script src="/static/htmx.min.js"' in page and '<link rel="stylesheet" href="/static/terrace.css">' in page


def test_page_titles_are_plain_text(env: Env) -> None:
    client = signed_in(env)
    for path in ("/app", "/app/acme/workspaces", "/app/acme/workspaces/prod", "/app/acme/workspaces/prod/runs"):
        title = re.search(r"<title>(.*?)</title>", client.get(path).text, re.S)
        assert title and "<" not in title.group(1) and "\n" not in title.group(1), path
