"""Be as liberal as TFC in what the API accepts: unknown attributes and relationships, `null` members, a
trailing slash, an empty `include=`, variable keys that are not identifiers. What Terrace knows is still checked."""

from __future__ import annotations

import uuid

import pytest
from state_helpers import Env


def _ws_body(**attributes: object) -> dict[str, object]:
    return {"data": {"type": "workspaces", "attributes": attributes}}


def test_unknown_attributes_and_relationships_are_ignored_on_workspace_create_and_update(state_env: Env) -> None:
    env = state_env
    body = _ws_body(name="liberal", type="workspaces", **{"vcs-repo": {}, "no-such-attribute": [1, 2]})
    body["data"]["relationships"] = {"agent-pool": {"data": {"type": "agent-pools", "id": "apool-x"}}}  # type: ignore[index]
    created = env.client.post(f"/api/v2/organizations/{env.org}/workspaces", headers=env.auth, json=body)
    assert created.status_code == 201, created.text
    ws_id = created.json()["data"]["id"]
    update = _ws_body(description="kept", **{"vcs-repo": None, "type": "workspaces", "created-at": "x"})
    update["data"]["relationships"] = None  # type: ignore[index]
    patched = env.client.patch(f"/api/v2/workspaces/{ws_id}", headers=env.auth, json=update)
    assert patched.status_code == 200, patched.text
    assert patched.json()["data"]["attributes"]["description"] == "kept"
    # what Terrace knows is still validated
    bad = env.client.patch(f"/api/v2/workspaces/{ws_id}", headers=env.auth, json=_ws_body(**{"auto-apply": "yes"}))
    assert bad.status_code == 422 and bad.json()["errors"][0]["source"]["pointer"] == "/data/attributes/auto-apply"


def test_unknown_attributes_are_ignored_on_organization_update(state_env: Env) -> None:
    env = state_env
    body = {"data": {"type": "organizations", "attributes": {"email": "new@example.com", "type": "x", "plan": 1}}}
    r = env.client.patch(f"/api/v2/organizations/{env.org}", headers=env.auth, json=body)
    assert r.status_code == 200, r.text
    assert r.json()["data"]["attributes"]["email"] == "new@example.com"


@pytest.mark.parametrize("category", ["terraform", "env"])
def test_variable_keys_need_not_be_identifiers(state_env: Env, category: str) -> None:
    env = state_env
    url = f"/api/v2/workspaces/{env.ws_id}/vars"
    key = str(uuid.uuid4())  # what go-tfe's tests use
    body = {"data": {"type": "vars", "attributes": {"key": key, "value": "v", "category": category, "type": "vars"}}}
    created = env.client.post(url, headers=env.auth, json=body)
    assert created.status_code == 201, created.text
    assert created.json()["data"]["attributes"]["key"] == key
    for bad in ("", "a\nb", "x" * 129, *(["A=B"] if category == "env" else [])):
        body["data"]["attributes"]["key"] = bad  # type: ignore[index]
        refused = env.client.post(url, headers=env.auth, json=body)
        assert refused.status_code == 422, (bad, refused.text)
        assert refused.json()["errors"][0]["source"]["pointer"] == "/data/attributes/key"
    assert [v["attributes"]["key"] for v in env.client.get(url, headers=env.auth).json()["data"]] == [key]


def test_a_trailing_slash_is_served_as_the_path_without_it_never_redirected(state_env: Env) -> None:
    env = state_env
    body = {"data": {"type": "vars", "attributes": {"key": "region", "value": "eu", "category": "terraform"}}}
    created = env.client.post(
        f"/api/v2/workspaces/{env.ws_id}/vars/", headers=env.auth, json=body, follow_redirects=False
    )
    assert created.status_code == 201, created.text
    read = env.client.get(f"/api/v2/workspaces/{env.ws_id}/", headers=env.auth, follow_redirects=False)
    assert read.status_code == 200 and read.json()["data"]["id"] == env.ws_id
    assert read.headers["TFP-API-Version"]  # the /api/v2 headers too
    listed = env.client.get(f"/api/v2/workspaces/{env.ws_id}/vars/", headers=env.auth, follow_redirects=False)
    assert [v["attributes"]["key"] for v in listed.json()["data"]] == ["region"]
    state = env.client.get(f"/state/v1/{env.org}/prod/", auth=("x", env.token), follow_redirects=False)
    assert state.status_code == 204  # no state yet: as the path without the slash
    missing = env.client.get("/api/v2/no-such-thing/", headers=env.auth, follow_redirects=False)
    assert missing.status_code == 404


def test_an_empty_include_is_accepted(state_env: Env) -> None:
    env = state_env
    for path in (
        f"/api/v2/workspaces/{env.ws_id}",
        f"/api/v2/organizations/{env.org}/workspaces",
        f"/api/v2/organizations/{env.org}/workspaces/prod",
        f"/api/v2/workspaces/{env.ws_id}/state-versions",
        f"/api/v2/workspaces/{env.ws_id}/runs",
        f"/api/v2/organizations/{env.org}",
    ):
        r = env.client.get(f"{path}?include=", headers=env.auth)
        assert r.status_code == 200, (path, r.text)
