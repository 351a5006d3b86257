"""An OAuth client made with an OAuth application's `key`/`secret` gets its token through the browser
(`services/vcs/oauth_flow.py`, `web/ui/vcs_providers.py`), in-process: the Connect button sends the owner to the
forge's authorize URL, the forge's redirect to the client's `callback-url` is exchanged for the token, which is
stored encrypted as the client's OAuth token and then used by the forge calls. Against the GitHub, GitLab and
Bitbucket Cloud twins (their OAuth endpoints as the vendors document them, `oauth_twin.py`); GitLab's and
Bitbucket's tokens are refreshed before they expire. A forged, tampered, expired, replayed state, one of another
session or another client, and a forge's refusal are 400 pages that store nothing and send nothing to the forge."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from bitbucket_twin import BitbucketCloudTwin
from fastapi.testclient import TestClient
from forge_twin import ForgeTwin
from github_contract import missing
from gitlab_twin import GitLabTwin
from itsdangerous import URLSafeTimedSerializer
from run_helpers import RunEnv, make_run_env
from terrace.adapters.bitbucket_forge import BitbucketForge
from terrace.adapters.forge import ForgeByKind
from terrace.adapters.github_forge import GitHubForge
from terrace.adapters.gitlab_forge import GitLabForge
from terrace.adapters.httpx_outbound import HttpxOutbound
from terrace.adapters.memory_outbound import MemoryOutbound
from terrace.adapters.outbound import OutboundResponse
from terrace.domain.destinations import Allowance
from terrace.web.app import create_app
from test_web_ui import csrf_of
from test_web_ui_version_control import _csp_clean
from ui_helpers import sign_in

PAGE = "/app/acme/settings/version-control"
LOOPBACK = Allowance.parse(["127.0.0.0/8"])


def _browser(env: RunEnv) -> TestClient:
    client = TestClient(create_app(env.container), base_url="https://testserver", follow_redirects=False)
    assert sign_in(client, env.headers["Authorization"].removeprefix("Bearer ")).status_code == 303
    return client


def _client(env: RunEnv, provider: str, http_url: str, key: str = "app-key", secret: str = "app-secret") -> Any:
    api = {"github": "/api/v3", "gitlab_community_edition": "/api/v4", "bitbucket_hosted": "/2.0"}.get(provider, "")
    body = {"data": {"type": "oauth-clients", "attributes": {
        "service-provider": provider, "http-url": http_url, "api-url": http_url + api, "key": key,
        "secret": secret}}}  # fmt: skip
    created = env.api("POST", "/organizations/acme/oauth-clients", body)
    assert created.status_code == 201, created.text
    assert created.json()["data"]["relationships"]["oauth-tokens"]["data"] == []  # none until connected
    return created.json()["data"]


def _connect(client: TestClient, client_id: str) -> str:
    """The Connect button's POST: the forge's authorize URL it redirects to."""
    page = client.get(PAGE)
    assert page.status_code == 200 and "Connect " in page.text and _csp_clean(page.text)
    started = client.post(f"{PAGE}/{client_id}/connect", data={"csrf_token": csrf_of(page.text)})
    assert started.status_code == 303, started.text
    return str(started.headers["location"])


def _callback(client: TestClient, location: str) -> Any:
    """The browser back at the callback-url: HCP's `/auth/<id>/callback`, handed to `/app`."""
    parts = urlsplit(location)
    handed = client.get(f"{parts.path}?{parts.query}")
    assert handed.status_code == 303 and handed.headers["location"].startswith("/app/oauth-clients/")
    return client.get(handed.headers["location"])


def _tokens(env: RunEnv, client_id: str) -> list[Any]:
    return list(env.api("GET", f"/oauth-clients/{client_id}/oauth-tokens").json()["data"])


FLAVOURS = {
    "github": (ForgeTwin, "github", "/login/oauth/authorize"),
    "gitlab": (GitLabTwin, "gitlab_community_edition", "/oauth/authorize"),
    "bitbucket": (BitbucketCloudTwin, "bitbucket_hosted", "/site/oauth2/authorize"),
}


@pytest.mark.parametrize("flavour", list(FLAVOURS))
def test_an_oauth_application_is_connected_through_the_forge(flavour: str, tmp_path: Path) -> None:
    if flavour == "github" and (reason := missing()):
        pytest.skip(reason)
    twin_class, provider, path = FLAVOURS[flavour]
    with twin_class(tmp_path, "forge-access-token") as twin:
        twin.create("octo/infra")
        forge = ForgeByKind({"github": GitHubForge(LOOPBACK), "gitlab": GitLabForge(LOOPBACK),
                             "bitbucket": BitbucketForge(LOOPBACK)})  # fmt: skip
        env = make_run_env(forge=forge, outbound=HttpxOutbound(LOOPBACK), outbound_allow=("127.0.0.0/8",))
        made = _client(env, provider, twin.http_url)
        callback = made["attributes"]["callback-url"]
        assert callback == f"https://localhost:8443/auth/{made['id']}/callback"  # what the operator registers
        key, secret = twin.oauth.register(callback)
        assert env.api("PATCH", f"/oauth-clients/{made['id']}", {"data": {"type": "oauth-clients", "attributes": {
            "key": key, "secret": secret}}}).status_code == 200  # fmt: skip
        browser = _browser(env)
        assert browser.get(made["attributes"]["connect-path"]).headers["location"] == f"/app/oauth-clients/{made['id']}"
        assert browser.get(f"/app/oauth-clients/{made['id']}").headers["location"] == f"{PAGE}#client-{made['id']}"

        authorize = _connect(browser, made["id"])
        query = parse_qs(urlsplit(authorize).query)
        assert authorize.startswith(twin.http_url + path) and query.get("redirect_uri", [callback]) == [callback]
        approved = httpx.get(authorize + "&approve=1")  # the owner approves on the forge's page
        assert approved.status_code == 302 and approved.headers["location"].startswith(callback + "?code=")
        done = _callback(browser, approved.headers["location"])
        assert done.status_code == 303 and done.headers["location"] == PAGE + "?connected=1", done.text
        assert "Provider connected" in browser.get(done.headers["location"]).text

        [token] = _tokens(env, made["id"])
        stored = env.container.vcs_store.token(token["id"])
        assert stored is not None
        public = stored.public
        assert env.container.oauth_clients.credential(public) == "forge-access-token"
        body = {"data": {"type": "workspaces", "attributes": {"vcs-repo": {
            "identifier": "octo/infra", "oauth-token-id": token["id"]}}}}  # fmt: skip
        connected = env.api("PATCH", f"/workspaces/{env.workspace_id}", body)
        assert connected.status_code == 200, connected.text  # the forge took the token the flow obtained
        assert len(twin.repos["octo/infra"].hooks) == 1
        [exchange] = twin.oauth.token_requests
        if flavour == "bitbucket":  # the consumer's key and secret as basic authentication, not in the form
            assert exchange == {"grant_type": "authorization_code", "code": exchange["code"]}
        else:
            assert exchange["redirect_uri"] == callback and exchange["client_secret"] == secret

        if flavour != "github":  # an expiring token is refreshed with its refresh token before a forge call
            assert stored.expires_at is not None and stored.refresh
            expired = dataclasses.replace(stored, expires_at=0, version=stored.version + 1)
            env.container.vcs_store.replace_token(expired, stored.version)
            first_refresh = set(twin.oauth.refresh_tokens)
            assert env.container.oauth_clients.credential(public) == "forge-access-token"
            assert twin.oauth.token_requests[-1]["grant_type"] == "refresh_token"
            again = env.container.vcs_store.token(token["id"])
            assert again is not None and again.expires_at and again.expires_at > 7000
            assert set(twin.oauth.refresh_tokens).isdisjoint(first_refresh)  # the spent one is gone
        assert twin.problems == []


GRANT = json.dumps({"access_token": "gho_granted", "scope": "repo", "token_type": "bearer"})


def _memory_env() -> tuple[RunEnv, MemoryOutbound, Any]:
    outbound = MemoryOutbound(answer=lambda url, body: OutboundResponse(200, GRANT))
    env = make_run_env(outbound=outbound)
    return env, outbound, _client(env, "github", "https://github.com")


def _state(location: str) -> str:
    return parse_qs(urlsplit(location).query)["state"][0]


def _refused(client: TestClient, client_id: str, **query: str) -> Any:
    answer = client.get(f"/app/oauth-clients/{client_id}/callback", params=query)
    assert answer.status_code == 400, answer.text
    assert "text/html" in answer.headers["content-type"] and _csp_clean(answer.text)
    return answer


def test_a_forged_expired_replayed_or_foreign_state_is_refused_and_stores_nothing(monkeypatch: Any) -> None:
    env, outbound, made = _memory_env()
    other = _client(env, "github", "https://github.com")
    browser = _browser(env)
    location = _connect(browser, made["id"])
    assert location.startswith("https://github.com/login/oauth/authorize?") and "client_id=app-key" in location
    state = _state(location)

    forged = URLSafeTimedSerializer("not-the-server-s", salt="terrace.vcs-oauth-state").dumps(
        {"c": made["id"], "s": "x", "n": "n"})  # fmt: skip
    assert "not this server" in _refused(browser, made["id"], code="c", state=forged).text
    _refused(browser, made["id"], code="c", state=state[:-2] + ("AA" if not state.endswith("AA") else "BB"))
    _refused(browser, made["id"], code="c", state="")
    assert "another provider" in _refused(browser, other["id"], code="c", state=state).text
    second = _browser(env)  # the same owner, another session
    assert "another session" in _refused(second, made["id"], code="c", state=state).text

    import itsdangerous.timed

    real = itsdangerous.timed.TimestampSigner.get_timestamp
    monkeypatch.setattr(itsdangerous.timed.TimestampSigner, "get_timestamp", lambda self: real(self) - 601)
    stale = _state(_connect(browser, made["id"]))
    monkeypatch.undo()
    assert "expired" in _refused(browser, made["id"], code="c", state=stale).text

    denied = _state(_connect(browser, made["id"]))
    assert "did not authorize" in _refused(browser, made["id"], error="access_denied", state=denied).text
    assert outbound.sent == [] and _tokens(env, made["id"]) == []  # nothing sent to the forge, nothing stored

    done = browser.get(f"/app/oauth-clients/{made['id']}/callback", params={"code": "c", "state": state})
    assert done.status_code == 303, done.text
    [sent] = outbound.sent
    assert sent.url == "https://github.com/login/oauth/access_token" and sent.headers["Accept"] == "application/json"
    assert parse_qs(sent.body.decode()) == {"client_id": ["app-key"], "client_secret": ["app-secret"], "code": ["c"],
                                             "redirect_uri": [made["attributes"]["callback-url"]]}  # fmt: skip
    [token] = _tokens(env, made["id"])
    assert "used already" in _refused(browser, made["id"], code="c", state=state).text  # a replay
    assert len(outbound.sent) == 1 and _tokens(env, made["id"]) == [token]
    assert "denied" not in str(_tokens(env, other["id"]))


def test_the_forge_s_refusal_and_clients_that_cannot_connect() -> None:
    env, outbound, made = _memory_env()
    refusal = {"error": "bad_verification_code", "error_description": "The code passed is incorrect or expired."}
    outbound.answer = lambda url, body: OutboundResponse(200, json.dumps(refusal))
    browser = _browser(env)
    state = _state(_connect(browser, made["id"]))
    assert "incorrect or expired" in _refused(browser, made["id"], code="old", state=state).text
    assert _tokens(env, made["id"]) == []
    outbound.answer = lambda url, body: OutboundResponse(None, error="blocked: 10.0.0.1 is a private address")
    state = _state(_connect(browser, made["id"]))
    assert "did not answer" in _refused(browser, made["id"], code="c", state=state).text

    pat = env.api("POST", "/organizations/acme/oauth-clients", {"data": {"type": "oauth-clients", "attributes": {
        "service-provider": "github", "http-url": "https://github.com", "api-url": "https://api.github.com",
        "oauth-token-string": "ghp_x"}}}).json()["data"]  # fmt: skip
    page = browser.get(PAGE)
    refused = browser.post(f"{PAGE}/{pat['id']}/connect", data={"csrf_token": csrf_of(page.text)})
    assert refused.status_code == 422 and "no key and secret" in refused.text
    assert browser.post(f"{PAGE}/{made['id']}/connect", data={}).status_code == 403  # no CSRF token
    unknown = browser.post(f"{PAGE}/oc-doesnotexist0000/connect", data={"csrf_token": csrf_of(page.text)})
    assert unknown.status_code == 404


def test_only_those_who_manage_vcs_settings_connect() -> None:
    from policy_helpers import member

    env, outbound, made = _memory_env()
    owner = _browser(env)
    state = _state(_connect(owner, made["id"]))
    for name, access in (("reader", {}), ("vcs-admin", {"manage-vcs-settings": True})):
        browser = TestClient(create_app(env.container), base_url="https://testserver", follow_redirects=False)
        assert sign_in(browser, member(env, name, **access)).status_code == 303
        page = browser.get(PAGE)
        started = browser.post(f"{PAGE}/{made['id']}/connect", data={"csrf_token": csrf_of(page.text)})
        if not access:  # a member reads the providers but may not connect one
            assert page.status_code == 200 and started.status_code == 403 and "alert" in started.text
            assert _refused(browser, made["id"], code="c", state=state)  # the owner's state is not theirs either
        else:
            assert started.status_code == 303 and started.headers["location"].startswith("https://github.com/")
    assert outbound.sent == [] and _tokens(env, made["id"]) == []
