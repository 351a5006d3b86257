"""OAuth clients and tokens (HCP's VCS providers) as go-tfe and the tfe provider call them: a client created with
an `oauth-token-string` gets its token at once; every credential is stored encrypted and never shown; other
organizations and members without `manage-vcs-settings` cannot change them; bad input is a 422."""

from __future__ import annotations

from typing import Any

from policy_helpers import call, member
from run_helpers import RunEnv, make_run_env
from table_items import memory_items
from terrace.domain.principal import PrincipalKind

PAT = "ghp_secretpersonalaccesstoken0123456789"


def _body(**attributes: Any) -> dict[str, Any]:
    return {"data": {"type": "oauth-clients", "attributes": attributes}}


def _github(**extra: Any) -> dict[str, Any]:
    attrs = {"service-provider": "github", "http-url": "https://github.com", "api-url": "https://api.github.com"}
    return _body(**{**attrs, "oauth-token-string": PAT, **extra})


def _create(env: RunEnv, body: dict[str, Any] | None = None) -> dict[str, Any]:
    created = env.api("POST", "/organizations/acme/oauth-clients", body or _github())
    assert created.status_code == 201, created.text
    return dict(created.json()["data"])


def _as_other_user(env: RunEnv, name: str) -> dict[str, str]:
    user = env.container.accounts.create_user(name)
    token = env.container.accounts.issue_token(PrincipalKind.USER, user.id).secret
    return {"Authorization": f"Bearer {token}", "Content-Type": "application/vnd.api+json"}


def test_a_personal_access_token_client_gets_its_token_at_once_and_never_shows_it() -> None:
    env = make_run_env()
    client = _create(env)
    attrs = client["attributes"]
    assert client["id"].startswith("oc-")
    assert attrs["service-provider"] == "github" and attrs["service-provider-display-name"] == "GitHub"
    assert attrs["api-url"] == "https://api.github.com" and attrs["http-url"] == "https://github.com"
    assert attrs["secret"] is None and attrs["name"] is None and attrs["organization-scoped"] is True
    tokens = client["relationships"]["oauth-tokens"]["data"]
    assert len(tokens) == 1 and tokens[0]["id"].startswith("ot-")
    assert client["relationships"]["organization"]["data"] == {"type": "organizations", "id": "acme"}
    listed = env.api("GET", "/organizations/acme/oauth-clients?include=oauth_tokens")
    assert [c["id"] for c in listed.json()["data"]] == [client["id"]]
    assert [t["id"] for t in listed.json()["included"]] == [tokens[0]["id"]]
    token = env.api("GET", f"/oauth-tokens/{tokens[0]['id']}").json()["data"]
    assert token["relationships"]["oauth-client"]["data"]["id"] == client["id"]
    assert token["attributes"]["has-ssh-key"] is False
    by_client = env.api("GET", f"/oauth-clients/{client['id']}/oauth-tokens").json()["data"]
    assert [t["id"] for t in by_client] == [tokens[0]["id"]]
    for response in (listed, env.api("GET", f"/oauth-clients/{client['id']}")):
        assert PAT not in response.text
    assert PAT not in repr(memory_items(env.container.table))  # stored encrypted
    # the area's forge calls get it back
    found = env.container.oauth_clients.usable_token("acme", tokens[0]["id"])
    assert found is not None and env.container.oauth_clients.credential(found[1]) == PAT


def test_bitbucket_key_pair_client_and_its_updates_as_go_tfe_sends_them() -> None:
    env = make_run_env()
    body = _body(**{"service-provider": "bitbucket_server", "http-url": "https://bbs.com", "api-url": "https://bbs.com",
                    "key": "consumer", "secret": "-----BEGIN RSA PRIVATE KEY-----\nsecretbits\n",
                    "rsa-public-key": "-----BEGIN PUBLIC KEY-----\nabc\n"})  # fmt: skip
    client = _create(env, body)
    assert client["attributes"]["key"] == "consumer" and client["relationships"]["oauth-tokens"]["data"] == []
    assert client["attributes"]["rsa-public-key"].startswith("-----BEGIN PUBLIC KEY")
    updated = env.api("PATCH", f"/oauth-clients/{client['id']}", _body(key="newkey"))
    assert updated.status_code == 200 and updated.json()["data"]["attributes"]["key"] == "newkey"
    assert updated.json()["data"]["attributes"]["rsa-public-key"] == client["attributes"]["rsa-public-key"]
    refused = env.api("PATCH", f"/oauth-clients/{client['id']}", _body(key=""))
    assert refused.status_code == 422 and "Consumer Key" in refused.json()["errors"][0]["detail"]
    scoped = env.api("PATCH", f"/oauth-clients/{client['id']}", _body(**{"organization-scoped": False}))
    assert scoped.json()["data"]["attributes"]["organization-scoped"] is False
    assert "secretbits" not in repr(memory_items(env.container.table))
    assert env.api("DELETE", f"/oauth-clients/{client['id']}").status_code == 204
    assert env.api("GET", f"/oauth-clients/{client['id']}").status_code == 404
    assert env.api("DELETE", f"/oauth-clients/{client['id']}").status_code == 404
    # a Data Center client may be made without a key, but a key it has is not emptied (go-tfe v1.109)
    keyless = _create(env, _body(**{"service-provider": "bitbucket_data_center", "http-url": "https://bbdc.com",
                                    "api-url": "https://bbdc.com", "organization-scoped": True}))  # fmt: skip
    emptied = env.api("PATCH", f"/oauth-clients/{keyless['id']}", _body(key=""))
    assert emptied.status_code == 422 and "Bitbucket Data Center" in emptied.json()["errors"][0]["detail"]


def test_tokens_take_an_ssh_key_and_deleting_a_token_leaves_its_client() -> None:
    env = make_run_env()
    client = _create(env)
    token_id = client["relationships"]["oauth-tokens"]["data"][0]["id"]
    body = {"data": {"type": "oauth-tokens", "attributes": {"ssh-key": "-----BEGIN OPENSSH PRIVATE KEY-----\nsshbits"}}}
    patched = env.api("PATCH", f"/oauth-tokens/{token_id}", body)
    assert patched.status_code == 200 and patched.json()["data"]["attributes"]["has-ssh-key"] is True
    assert "sshbits" not in patched.text and "sshbits" not in repr(memory_items(env.container.table))
    assert env.api("DELETE", f"/oauth-tokens/{token_id}").status_code == 204
    assert env.api("GET", f"/oauth-tokens/{token_id}").status_code == 404
    left = env.api("GET", f"/oauth-clients/{client['id']}").json()["data"]
    assert left["relationships"]["oauth-tokens"]["data"] == []


def test_projects_scope_a_client() -> None:
    env = make_run_env()
    project = env.api(
        "POST", "/organizations/acme/projects", {"data": {"type": "projects", "attributes": {"name": "proj-one"}}}
    )
    assert project.status_code == 201, project.text
    project_id = project.json()["data"]["id"]
    client = _create(env)
    refs = {"data": [{"type": "projects", "id": project_id}]}
    assert env.api("POST", f"/oauth-clients/{client['id']}/relationships/projects", refs).status_code == 204
    read = env.api("GET", f"/oauth-clients/{client['id']}").json()["data"]
    assert read["relationships"]["projects"]["data"] == [{"type": "projects", "id": project_id}]
    assert env.api("DELETE", f"/oauth-clients/{client['id']}/relationships/projects", refs).status_code == 204
    read = env.api("GET", f"/oauth-clients/{client['id']}").json()["data"]
    assert read["relationships"]["projects"]["data"] == []
    missing = {"data": [{"type": "projects", "id": "prj-doesnotexist"}]}
    assert env.api("POST", f"/oauth-clients/{client['id']}/relationships/projects", missing).status_code == 404


def test_bad_input_is_a_422_naming_the_attribute_and_writes_nothing() -> None:
    env = make_run_env()
    ok = {"service-provider": "github", "http-url": "https://github.com", "api-url": "https://api.github.com"}
    for attrs, pointer in (
        ({**ok, "service-provider": "svn"}, "/data/attributes/service-provider"),
        ({**ok, "service-provider": {}}, "/data/attributes/service-provider"),
        ({k: v for k, v in ok.items() if k != "api-url"}, "/data/attributes/api-url"),
        ({**ok, "http-url": "ftp://github.com"}, "/data/attributes/http-url"),
        ({**ok, "api-url": "https://user:pw@api.github.com"}, "/data/attributes/api-url"),
        ({**ok, "oauth-token-string": "t" * 5000}, "/data/attributes/oauth-token-string"),
        ({**ok, "private-key": "k"}, "/data/attributes/private-key"),
        ({**ok, "organization-scoped": "yes"}, "/data/attributes/organization-scoped"),
        ({**ok, "name": 7}, "/data/attributes/name"),
    ):
        refused = env.api("POST", "/organizations/acme/oauth-clients", _body(**attrs))
        assert refused.status_code == 422, (attrs, refused.text)
        assert refused.json()["errors"][0]["source"]["pointer"] == pointer
    assert env.api("POST", "/organizations/acme/oauth-clients", {"data": []}).status_code == 422
    assert env.api("GET", "/organizations/acme/oauth-clients").json()["data"] == []


def test_other_organizations_and_plain_members_cannot_change_clients() -> None:
    env = make_run_env()
    client = _create(env)
    token_id = client["relationships"]["oauth-tokens"]["data"][0]["id"]
    outsider = _as_other_user(env, "mallory")
    assert env.client.get(f"/api/v2/oauth-clients/{client['id']}", headers=outsider).status_code == 404
    assert env.client.get(f"/api/v2/oauth-tokens/{token_id}", headers=outsider).status_code == 404
    assert env.client.get("/api/v2/organizations/acme/oauth-clients", headers=outsider).status_code == 404
    assert env.client.delete(f"/api/v2/oauth-clients/{client['id']}", headers=outsider).status_code == 404
    # a member without manage-vcs-settings reads (connecting a workspace picks a token) but changes nothing
    plain = member(env, "bob")
    assert call(env, plain, "GET", f"/oauth-clients/{client['id']}").status_code == 200
    assert call(env, plain, "PATCH", f"/oauth-clients/{client['id']}", _body(name="x")).status_code == 403
    assert call(env, plain, "DELETE", f"/oauth-tokens/{token_id}").status_code == 403
    assert call(env, plain, "POST", "/organizations/acme/oauth-clients", _github()).status_code == 403
    vcs_admin = member(env, "carol", **{"manage-vcs-settings": True})
    assert call(env, vcs_admin, "PATCH", f"/oauth-clients/{client['id']}", _body(name="x")).status_code == 200
