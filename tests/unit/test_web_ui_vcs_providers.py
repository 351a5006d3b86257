"""The organization's Settings → Version control page (`web/ui/vcs_providers.py`), in-process: it lists the
organization's OAuth clients, adds one with a personal access token (a Gitea or Forgejo forge as a GitHub-compatible
`github_enterprise` client whose blank api-url is `<http-url>/api/v1`) whose token the workspace connect form offers
at once and that connects a repository, shows a bad form inline without sending the token back, deletes a client
(another organization's is not found, by the service itself), and is CSP-clean."""

from __future__ import annotations

import re

import pytest
from run_helpers import RunEnv, make_run_env
from terrace.adapters.memory_forge import MemoryForge
from terrace.domain.errors import NotFound
from test_web_ui import csrf_of
from test_web_ui_version_control import _browser, _csp_clean

PAGE = "/app/acme/settings/version-control"
PAT = "gta_uiprovidertoken"


def test_add_a_provider_connect_a_workspace_through_its_token_and_delete_it() -> None:
    env = make_run_env()
    forge = env.container.forge
    assert isinstance(forge, MemoryForge)
    forge.add("octo/infra", PAT)
    client = _browser(env)
    empty = client.get(PAGE)
    assert empty.status_code == 200 and "No VCS provider yet" in empty.text and _csp_clean(empty.text)
    assert 'href="/app/acme/settings/version-control"' in client.get("/app/acme/settings").text
    form = {"provider": "gitea", "name": "our gitea", "http_url": "https://gitea.example.com/", "api_url": "",
            "oauth_token_string": PAT}  # fmt: skip
    assert client.post(PAGE, data=form).status_code == 403  # no CSRF token
    missing = client.post(PAGE, data={**form, "http_url": "", "csrf_token": csrf_of(empty.text)})
    assert missing.status_code == 422 and 'role="alert"' in missing.text and "http-url is required" in missing.text
    assert re.search(r'id="http_url"[^>]*aria-invalid="true"', missing.text) and PAT not in missing.text
    assert 'value="our gitea"' in missing.text and _csp_clean(missing.text)
    done = client.post(PAGE, data={**form, "csrf_token": csrf_of(empty.text)})
    assert done.status_code == 303 and done.headers["location"] == PAGE + "?created=1"
    [made] = env.api("GET", "/organizations/acme/oauth-clients").json()["data"]
    attributes = made["attributes"]
    assert (attributes["service-provider"], attributes["http-url"], attributes["api-url"], attributes["name"]) == (
        "github_enterprise",
        "https://gitea.example.com",
        "https://gitea.example.com/api/v1",
        "our gitea",
    )
    [token] = made["relationships"]["oauth-tokens"]["data"]
    listed = client.get(done.headers["location"])
    assert "Provider added" in listed.text and made["id"] in listed.text and token["id"] in listed.text
    assert PAT not in listed.text and _csp_clean(listed.text)

    connect_page = "/app/acme/workspaces/app/settings/version-control"  # the token is offered at once
    offered = client.get(connect_page)
    assert f'value="{token["id"]}"' in offered.text
    connect = {"oauth_token_id": token["id"], "identifier": "octo/infra", "branch": "", "working_directory": "",
               "trigger_patterns": "", "tags_regex": "", "csrf_token": csrf_of(offered.text)}  # fmt: skip
    assert client.post(connect_page, data=connect).status_code == 303
    assert len(forge.repositories["octo/infra"].hooks) == 1  # the forge took the token typed into the page
    assert forge.calls[0] == "GET /repos/octo/infra"

    other = client.post(f"{PAGE}/oc-doesnotexist0000/delete", data={"csrf_token": csrf_of(listed.text)})
    assert other.status_code == 404
    gone = client.post(f"{PAGE}/{made['id']}/delete", data={"csrf_token": csrf_of(listed.text)})
    assert gone.status_code == 303 and gone.headers["location"] == PAGE + "?deleted=1"
    assert env.api("GET", "/organizations/acme/oauth-clients").json()["data"] == []


def test_the_provider_s_usual_addresses_fill_blank_ones() -> None:
    from terrace.web.ui.vcs_providers import attributes_of

    github = attributes_of({"provider": "github", "oauth_token_string": "t"})
    assert (github["http-url"], github["api-url"]) == ("https://github.com", "https://api.github.com")
    gitlab = attributes_of({"provider": "gitlab_hosted", "oauth_token_string": "t"})
    assert (gitlab["service-provider"], gitlab["api-url"]) == ("gitlab_hosted", "https://gitlab.com/api/v4")
    ghes = attributes_of(
        {"provider": "github_enterprise", "http_url": "https://ghe.example", "oauth_token_string": "t"}
    )
    assert ghes["api-url"] == "https://ghe.example/api/v3"
    own = attributes_of({"provider": "gitlab_community_edition", "http_url": "https://git.example",
                         "api_url": "https://api.git.example/v4", "oauth_token_string": "t"})  # fmt: skip
    assert own["api-url"] == "https://api.git.example/v4"


def _client_of_another_organization(env: RunEnv) -> str:
    """An OAuth application's client of `beta`, a second organization alice owns."""
    made = env.api("POST", "/organizations", {"data": {"type": "organizations",
                   "attributes": {"name": "beta", "email": "b@example.com"}}})  # fmt: skip
    assert made.status_code == 201, made.text
    attributes = {"service-provider": "github", "name": "beta's", "http-url": "https://github.com",
                  "api-url": "https://api.github.com", "key": "k", "secret": "s"}  # fmt: skip
    body = {"data": {"type": "oauth-clients", "attributes": attributes}}
    created = env.api("POST", "/organizations/beta/oauth-clients", body)
    assert created.status_code == 201, created.text
    return str(created.json()["data"]["id"])


def test_the_service_refuses_a_client_of_another_organization() -> None:
    env = make_run_env()
    beta_client = _client_of_another_organization(env)
    alice = env.container.accounts.authenticate(env.headers["Authorization"].removeprefix("Bearer "))
    clients, flow = env.container.oauth_clients, env.container.vcs_oauth
    with pytest.raises(NotFound):
        clients.delete(alice, beta_client, "acme")
    with pytest.raises(NotFound):
        clients.manageable(alice, beta_client, "acme")
    with pytest.raises(NotFound):
        flow.start(alice, beta_client, "session", "acme")
    assert clients.manageable(alice, beta_client, "beta").id == beta_client
    assert flow.start(alice, beta_client, "session", "beta").startswith("https://github.com/")
    clients.delete(alice, beta_client, "beta")
    assert env.api("GET", "/organizations/beta/oauth-clients").json()["data"] == []


def test_the_page_of_one_organization_neither_deletes_nor_connects_another_s_client() -> None:
    env = make_run_env()
    beta_client = _client_of_another_organization(env)
    client = _browser(env)
    csrf = {"csrf_token": csrf_of(client.get(PAGE).text)}
    assert client.post(f"{PAGE}/{beta_client}/delete", data=csrf).status_code == 404
    assert client.post(f"{PAGE}/{beta_client}/connect", data=csrf).status_code == 404
    [kept] = env.api("GET", "/organizations/beta/oauth-clients").json()["data"]
    assert kept["id"] == beta_client
    beta_page = "/app/beta/settings/version-control"
    assert client.post(f"{beta_page}/{beta_client}/connect", data=csrf).status_code == 303
    assert client.post(f"{beta_page}/{beta_client}/delete", data=csrf).status_code == 303
    assert env.api("GET", "/organizations/beta/oauth-clients").json()["data"] == []
