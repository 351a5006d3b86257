"""Workspace settings and deletion in the web UI; sessions end when their token is revoked."""

from __future__ import annotations

import pytest
from state_helpers import Env, make_env, null_resource, other_user, state_bytes
from terrace.domain import clock
from test_web_ui import browser, csrf_of, signed_in
from ui_helpers import sign_in

URL = "/app/acme/workspaces/prod/settings"


@pytest.fixture
def env() -> Env:
    return make_env()


def test_settings_form_saves_every_field(env: Env) -> None:
    client = signed_in(env)
    page = client.get(URL)
    assert page.status_code == 200 and 'for="terraform_version"' in page.text
    form = {
        "execution_mode": "remote",
        "auto_apply": "on",
        "terraform_version": "1.0.3",
        "working_directory": "envs/prod",
        "csrf_token": csrf_of(page.text),
    }
    assert client.post(URL, data={k: v for k, v in form.items() if k != "csrf_token"}).status_code == 403
    assert env.ws().execution_mode == "local"
    r = client.post(URL, data=form)
    assert r.status_code == 303 and "saved=1" in r.headers["location"]
    ws = env.ws()
    assert (ws.execution_mode, ws.auto_apply, ws.terraform_version, ws.working_directory) == (
        "remote",
        True,
        "1.0.3",
        "envs/prod",
    )
    assert "Settings saved" in client.get(r.headers["location"]).text
    off = client.post(URL, data={**form, "auto_apply": ""})
    assert off.status_code == 303 and env.ws().auto_apply is False


def test_invalid_settings_show_inline_errors_and_change_nothing(env: Env) -> None:
    client = signed_in(env)
    token = csrf_of(client.get(URL).text)
    r = client.post(URL, data={"execution_mode": "remote", "terraform_version": "not a version", "csrf_token": token})
    assert r.status_code == 422 and 'role="alert"' in r.text and 'value="not a version"' in r.text
    assert env.ws().terraform_version == "latest" and env.ws().execution_mode == "local"


def test_delete_needs_the_name_and_refuses_a_workspace_with_resources_unless_forced(env: Env) -> None:
    env.lock()
    assert env.push(state_bytes(1, resources=[null_resource("a", "1")]), 1).status_code == 201
    env.container.locks.unlock(env.principal, env.ws())
    client = signed_in(env)
    token = csrf_of(client.get(URL).text)
    wrong = client.post(f"{URL}/delete", data={"confirm_name": "nope", "csrf_token": token})
    assert wrong.status_code == 422 and "Type the workspace" in wrong.text
    safe = client.post(f"{URL}/delete", data={"confirm_name": "prod", "csrf_token": token})
    assert safe.status_code == 409 and "manages 1 resources" in safe.text
    assert client.post(f"{URL}/delete", data={"confirm_name": "prod", "force": "on"}).status_code == 403
    assert env.container.workspaces.find_id("acme", "prod")
    r = client.post(f"{URL}/delete", data={"confirm_name": "prod", "force": "on", "csrf_token": token})
    assert r.status_code == 303 and env.container.workspaces.find_id("acme", "prod") is None
    assert "was deleted" in client.get(r.headers["location"]).text
    assert client.get("/app/acme/workspaces/prod").status_code == 404


def test_another_organizations_user_gets_404_for_settings(env: Env) -> None:
    token, _ = other_user(env)
    client = browser(env)
    assert sign_in(client, token).status_code == 303
    assert client.get(URL).status_code == 404
    csrf = csrf_of(client.get("/app").text)
    assert client.post(URL, data={"execution_mode": "remote", "csrf_token": csrf}).status_code == 404
    assert client.post(f"{URL}/delete", data={"confirm_name": "prod", "csrf_token": csrf}).status_code == 404
    assert env.ws().execution_mode == "local"


def test_revoking_the_token_ends_its_sessions_at_once(env: Env) -> None:
    client = signed_in(env)
    other = browser(env)  # a second session from another token of the same user stays
    second = env.container.accounts.issue_token(env.principal.kind, env.principal.subject_id, description="second")
    assert sign_in(other, second.secret).status_code == 303
    assert client.get("/app").status_code == 200
    token_id = env.container.accounts.authenticate(env.token).token_id
    assert token_id
    r = other.post(f"/app/account/tokens/{token_id}/revoke", data={"csrf_token": csrf_of(other.get("/app").text)})
    assert r.status_code == 303
    assert client.get("/app").status_code == 303  # back to sign-in: the session died with its token
    assert other.get("/app").status_code == 200


def test_an_expired_token_ends_its_session(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    issued = env.container.accounts.issue_token(env.principal.kind, env.principal.subject_id, ttl_s=60)
    client = browser(env)
    assert sign_in(client, issued.secret).status_code == 303
    assert client.get("/app").status_code == 200
    now = clock.epoch()  # the token's expiry passes (its token item and its lookup item both carry it)
    monkeypatch.setattr(clock, "epoch", lambda: now + 61)
    assert client.get("/app").status_code == 303


def test_the_tool_is_chosen_beside_its_versions(env: Env) -> None:
    client = signed_in(env)
    page = client.get(URL)
    assert '<option value="terraform" selected>Terraform</option>' in page.text  # the deployment's default tool
    assert 'list="versions-terraform"' in page.text
    assert (
        '<datalist id="versions-opentofu" data-tool="opentofu">' in page.text and '<option value="1.9.4">' in page.text
    )
    token = csrf_of(page.text)
    bad = client.post(URL, data={"execution_mode": "local", "iac_platform": "pulumi", "csrf_token": token})
    assert bad.status_code == 422 and "iac-platform must be one of terraform, opentofu" in bad.text
    assert env.ws().tool == "terraform"
    form = {"execution_mode": "local", "iac_platform": "opentofu", "terraform_version": "1.9.4", "csrf_token": token}
    assert client.post(URL, data=form).status_code == 303
    assert (env.ws().tool, env.ws().terraform_version) == ("opentofu", "1.9.4")
    shown = client.get(URL).text
    assert '<option value="opentofu" selected>OpenTofu</option>' in shown and 'list="versions-opentofu"' in shown


def test_a_new_workspace_takes_the_tool_chosen_and_its_page_names_it(env: Env) -> None:
    client = signed_in(env)
    page = client.get("/app/acme/workspaces/new")
    assert '<option value="terraform" selected>Terraform</option>' in page.text  # the deployment's default tool
    form = {"name": "tofu-ws", "execution_mode": "remote", "iac_platform": "opentofu", "csrf_token": csrf_of(page.text)}
    created = client.post("/app/acme/workspaces/new", data=form)
    assert created.status_code == 303, created.text
    ws = env.container.workspaces.get_by_name(env.principal, "acme", "tofu-ws")
    assert ws.tool == "opentofu"
    assert '<dd id="ws-tool">OpenTofu latest</dd>' in client.get("/app/acme/workspaces/tofu-ws").text
    refused = client.post("/app/acme/workspaces/new", data={**form, "name": "bad", "iac_platform": "pulumi"})
    assert refused.status_code == 422 and "iac-platform must be one of terraform, opentofu" in refused.text
