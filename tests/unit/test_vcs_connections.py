"""A workspace's `vcs-repo`, as the tfe provider's `tfe_workspace.vcs_repo` sends it: connecting registers a webhook
on the repository with a secret of its own, stored encrypted; changing the repository moves the hook; `vcs-repo:
null` and deleting the workspace delete it; a token of another organization or a forge that refuses is a 4xx."""

from __future__ import annotations

from typing import Any

from run_helpers import RunEnv, make_run_env
from table_items import memory_items
from terrace.adapters.memory_forge import MemoryForge

PAT = "ghp_connectionstoken"


def github_client(env: RunEnv, api_url: str = "https://api.github.com", org: str = "acme") -> str:
    body = {"data": {"type": "oauth-clients", "attributes": {
        "service-provider": "github", "http-url": "https://github.com", "api-url": api_url,
        "oauth-token-string": PAT}}}  # fmt: skip
    created = env.api("POST", f"/organizations/{org}/oauth-clients", body)
    assert created.status_code == 201, created.text
    return str(created.json()["data"]["relationships"]["oauth-tokens"]["data"][0]["id"])


def repo(token_id: str, identifier: str = "octo/infra", **extra: Any) -> dict[str, Any]:
    return {"identifier": identifier, "oauth-token-id": token_id, "branch": "", **extra}


def _forge(env: RunEnv) -> MemoryForge:
    forge = env.container.forge
    assert isinstance(forge, MemoryForge)
    return forge


def _workspace(env: RunEnv, name: str, **attributes: Any) -> Any:
    body = {"data": {"type": "workspaces", "attributes": {"name": name, **attributes}}}
    return env.api("POST", "/organizations/acme/workspaces", body)


def test_connecting_registers_a_webhook_with_its_own_secret_and_shows_hcp_s_shape() -> None:
    env = make_run_env()
    token = github_client(env)
    _forge(env).add("octo/infra", PAT)
    created = _workspace(
        env, "net", **{"vcs-repo": repo(token, **{"tags-regex": r"^v\d+$"}), "working-directory": "env"}
    )
    assert created.status_code == 201, created.text
    ws = created.json()["data"]
    shown = ws["attributes"]["vcs-repo"]
    assert shown["identifier"] == "octo/infra" and shown["oauth-token-id"] == token
    assert shown["service-provider"] == "github" and shown["tags-regex"] == r"^v\d+$"
    assert shown["webhook-url"].endswith(f"/api/vcs/webhooks/{ws['id']}")
    assert ws["attributes"]["vcs-repo-identifier"] == "octo/infra"
    hooks = _forge(env).repositories["octo/infra"].hooks
    [(url, secret)] = hooks.values()
    assert url == shown["webhook-url"] and len(secret) == 64
    assert secret not in created.text and secret not in repr(memory_items(env.container.table))
    read = env.api("GET", f"/workspaces/{ws['id']}").json()["data"]["attributes"]
    assert read["vcs-repo"] == shown and read["file-triggers-enabled"] is True
    # the same repository again: the hook stays; another one: the hook moves
    same = env.api("PATCH", f"/workspaces/{ws['id']}", {"data": {"type": "workspaces", "attributes": {
        "vcs-repo": repo(token, branch="release")}}})  # fmt: skip
    assert same.status_code == 200 and same.json()["data"]["attributes"]["vcs-repo"]["branch"] == "release"
    assert list(hooks.values()) == [(url, secret)]
    _forge(env).add("octo/other", PAT)
    moved = env.api("PATCH", f"/workspaces/{ws['id']}", {"data": {"type": "workspaces", "attributes": {
        "vcs-repo": repo(token, "octo/other")}}})  # fmt: skip
    assert moved.status_code == 200 and hooks == {}
    assert len(_forge(env).repositories["octo/other"].hooks) == 1
    gone = env.api(
        "PATCH", f"/workspaces/{ws['id']}", {"data": {"type": "workspaces", "attributes": {"vcs-repo": None}}}
    )
    assert gone.status_code == 200 and gone.json()["data"]["attributes"]["vcs-repo"] is None
    assert _forge(env).repositories["octo/other"].hooks == {}
    assert env.container.vcs_store.connection(ws["id"]) is None


def test_bad_repositories_and_tokens_are_4xx_and_leave_nothing() -> None:
    env = make_run_env()
    token = github_client(env)
    _forge(env).add("octo/infra", "another-credential")  # the forge refuses this token (401)
    for raw, status, pointer in (
        (repo(token, "no-slash"), 422, "/data/attributes/vcs-repo/identifier"),
        (repo(token, "../../etc"), 422, "/data/attributes/vcs-repo/identifier"),
        (repo("ot-doesnotexist"), 404, None),
        ({"identifier": "octo/infra"}, 422, "/data/attributes/vcs-repo/oauth-token-id"),
        (repo(token, **{"tags-regex": "("}), 422, "/data/attributes/vcs-repo/tags-regex"),
        (repo(token, **{"ingress-submodules": "yes"}), 422, "/data/attributes/vcs-repo/ingress-submodules"),
        (repo(token), 422, "/data/attributes/vcs-repo/identifier"),  # 401 from the forge
        ("octo/infra", 422, "/data/attributes/vcs-repo"),
    ):
        refused = _workspace(env, "net", **{"vcs-repo": raw})
        assert refused.status_code == status, (raw, refused.text)
        if pointer:
            assert refused.json()["errors"][0]["source"]["pointer"] == pointer
    assert env.api("GET", "/organizations/acme/workspaces/net").status_code == 404
    assert _forge(env).repositories["octo/infra"].hooks == {}


def test_another_organization_s_token_is_not_found() -> None:
    env = make_run_env()
    org = {"data": {"type": "organizations", "attributes": {"name": "other", "email": "o@example.com"}}}
    assert env.api("POST", "/organizations", org).status_code == 201
    foreign = github_client(env, org="other")
    _forge(env).add("octo/infra", PAT)
    refused = _workspace(env, "net", **{"vcs-repo": repo(foreign)})
    assert refused.status_code == 404, refused.text
    assert _forge(env).repositories["octo/infra"].hooks == {}


def test_a_name_conflict_deletes_the_hook_it_registered() -> None:
    env = make_run_env()
    token = github_client(env)
    _forge(env).add("octo/infra", PAT)
    assert _workspace(env, "net").status_code == 201
    assert _workspace(env, "net", **{"vcs-repo": repo(token)}).status_code == 409
    assert _forge(env).repositories["octo/infra"].hooks == {}


def test_deleting_the_workspace_or_its_organization_deletes_the_hook_and_the_clients() -> None:
    env = make_run_env()
    token = github_client(env)
    _forge(env).add("octo/infra", PAT)
    ws = _workspace(env, "net", **{"vcs-repo": repo(token)}).json()["data"]
    assert len(_forge(env).repositories["octo/infra"].hooks) == 1
    assert env.api("DELETE", f"/workspaces/{ws['id']}").status_code == 204
    assert _forge(env).repositories["octo/infra"].hooks == {}
    assert env.container.vcs_store.connection(ws["id"]) is None
    _workspace(env, "again", **{"vcs-repo": repo(token)})
    assert env.api("DELETE", "/organizations/acme").status_code == 204
    assert _forge(env).repositories["octo/infra"].hooks == {}
    assert env.container.vcs_store.token(token) is None
