"""Tags: organization tags with ids and counts, workspace tags by name or id, list filters, and key-value tag
bindings (Terraform >= 1.10's `cloud` block)."""

from __future__ import annotations

from typing import Any

from run_helpers import RunEnv, make_run_env


def _workspace(env: RunEnv, name: str, relationships: dict[str, Any] | None = None) -> str:
    body: dict[str, Any] = {"data": {"type": "workspaces", "attributes": {"name": name}}}
    if relationships:
        body["data"]["relationships"] = relationships
    response = env.api("POST", "/organizations/acme/workspaces", body)
    assert response.status_code == 201, response.text
    return str(response.json()["data"]["id"])


def _tags(*names: str) -> dict[str, Any]:
    return {"data": [{"type": "tags", "attributes": {"name": n}} for n in names]}


def _names(env: RunEnv, query: str) -> list[str]:
    response = env.api("GET", f"/organizations/acme/workspaces?{query}")
    assert response.status_code == 200, response.text
    return sorted(ws["attributes"]["name"] for ws in response.json()["data"])


def test_workspace_tags_by_name_and_id_and_organization_tags_with_counts() -> None:
    env = make_run_env()
    other = _workspace(env, "other")
    assert env.api("POST", f"/workspaces/{env.workspace_id}/relationships/tags", _tags("b", "a")).status_code == 204
    listed = env.api("GET", f"/workspaces/{env.workspace_id}/relationships/tags").json()["data"]
    assert [t["attributes"]["name"] for t in listed] == ["a", "b"]
    tag_a = listed[0]["id"]
    assert tag_a.startswith("tag-")
    by_id = {"data": [{"type": "tags", "id": tag_a}]}
    assert env.api("POST", f"/workspaces/{other}/relationships/tags", by_id).status_code == 204
    assert env.api("GET", f"/workspaces/{other}").json()["data"]["attributes"]["tag-names"] == ["a"]

    org_tags = env.api("GET", "/organizations/acme/tags").json()["data"]
    assert {t["attributes"]["name"]: t["attributes"]["instance-count"] for t in org_tags} == {"a": 2, "b": 1}
    assert all(t["relationships"]["organization"]["data"]["id"] == "acme" for t in org_tags)
    assert [t["attributes"]["name"] for t in env.api("GET", "/organizations/acme/tags?q=b").json()["data"]] == ["b"]
    excluded = env.api("GET", f"/organizations/acme/tags?filter%5Bexclude%5D%5Btaggable%5D%5Bid%5D={other}")
    assert [t["attributes"]["name"] for t in excluded.json()["data"]] == ["b"]

    removed = env.client.request(
        "DELETE",
        f"/api/v2/workspaces/{env.workspace_id}/relationships/tags",
        json=_tags("b", "missing"),
        headers=env.headers,
    )
    assert removed.status_code == 204, removed.text
    assert env.api("GET", f"/workspaces/{env.workspace_id}").json()["data"]["attributes"]["tag-names"] == ["a"]

    third = _workspace(env, "third")
    attach = {"data": [{"type": "workspaces", "id": third}]}
    assert env.api("POST", f"/tags/{tag_a}/relationships/workspaces", attach).status_code == 204
    assert env.api("GET", f"/workspaces/{third}/relationships/tags").json()["data"][0]["id"] == tag_a

    gone = env.client.request(
        "DELETE", "/api/v2/organizations/acme/tags", json={"data": [{"type": "tags", "id": tag_a}]}, headers=env.headers
    )
    assert gone.status_code == 204, gone.text
    assert env.api("GET", f"/workspaces/{other}").json()["data"]["attributes"]["tag-names"] == []
    assert env.api("POST", f"/tags/{tag_a}/relationships/workspaces", attach).status_code == 404
    assert env.api("POST", f"/workspaces/{other}/relationships/tags", {"data": []}).status_code == 422


def test_workspace_list_filters_tags_exclude_tags_and_tag_bindings() -> None:
    env = make_run_env()
    for name, tags in (("one", ("web", "prod")), ("two", ("web",)), ("three", ("db",))):
        _workspace(env, name, {"tags": _tags(*tags)})
    binding = {"data": [{"type": "tag-bindings", "attributes": {"key": "env", "value": "prod"}}]}
    _workspace(env, "four", {"tag-bindings": binding})
    assert _names(env, "search%5Btags%5D=web") == ["one", "two"]
    assert _names(env, "search%5Btags%5D=web,prod") == ["one"]
    assert _names(env, "search%5Bexclude-tags%5D=web") == ["app", "four", "three"]
    assert _names(env, "search%5Btags%5D=web&search%5Bexclude-tags%5D=prod") == ["two"]
    assert _names(env, "filter%5Btagged%5D%5B0%5D%5Bkey%5D=env&filter%5Btagged%5D%5B0%5D%5Bvalue%5D=prod") == ["four"]
    assert _names(env, "filter%5Btagged%5D%5B0%5D%5Bkey%5D=env&filter%5Btagged%5D%5B0%5D%5Bvalue%5D=dev") == []
    assert _names(env, "filter%5Btagged%5D%5B0%5D%5Bkey%5D=db") == ["three"]
    assert _names(env, "search%5Btags%5D=env") == [
        "four"
    ]  # Terraform 1.11 sends binding keys as search[tags]  # a plain tag is a key without value
    assert _names(env, "include=") == ["app", "four", "one", "three", "two"]


def test_tag_bindings_are_listed_added_and_set_on_update() -> None:
    env = make_run_env()
    ws = env.workspace_id
    add = {"data": [{"type": "tag-bindings", "attributes": {"key": "team", "value": "core"}}]}
    added = env.api("PATCH", f"/workspaces/{ws}/tag-bindings", add)
    assert added.status_code == 200, added.text
    plain = {"data": [{"type": "tag-bindings", "attributes": {"key": "app"}}]}
    assert env.api("PATCH", f"/workspaces/{ws}/tag-bindings", plain).status_code == 200
    listed = env.api("GET", f"/workspaces/{ws}/tag-bindings").json()["data"]
    assert [(b["attributes"]["key"], b["attributes"]["value"]) for b in listed] == [("team", "core"), ("app", "")]
    effective = env.api("GET", f"/workspaces/{ws}/effective-tag-bindings").json()["data"]
    assert {b["attributes"]["key"] for b in effective} == {"app", "team"}
    assert env.api("GET", f"/workspaces/{ws}").json()["data"]["attributes"]["tag-names"] == ["app"]
    update = {
        "data": {
            "type": "workspaces",
            "attributes": {},
            "relationships": {
                "tag-bindings": {"data": [{"type": "tag-bindings", "attributes": {"key": "x", "value": "1"}}]}
            },
        }
    }
    assert env.api("PATCH", f"/workspaces/{ws}", update).status_code == 200
    listed = env.api("GET", f"/workspaces/{ws}/tag-bindings").json()["data"]
    assert [(b["attributes"]["key"], b["attributes"]["value"]) for b in listed] == [("x", "1"), ("app", "")]
    bad = {"data": [{"type": "tag-bindings", "attributes": {"key": "", "value": "v"}}]}
    assert env.api("PATCH", f"/workspaces/{ws}/tag-bindings", bad).status_code == 422


def test_workspace_list_order_is_creation_order_unless_sorted() -> None:
    env = make_run_env()
    for name in ("zeta", "alpha", "mid"):
        _workspace(env, name)

    def order(query: str) -> list[str]:
        data = env.api("GET", f"/organizations/acme/workspaces?{query}").json()["data"]
        return [ws["attributes"]["name"] for ws in data]

    assert order("") == ["app", "zeta", "alpha", "mid"]
    assert order("sort=name") == ["alpha", "app", "mid", "zeta"]
    assert order("sort=-name") == ["zeta", "mid", "app", "alpha"]
    assert order("sort=unknown") == ["app", "zeta", "alpha", "mid"]


def test_workspaces_sort_by_their_current_runs_creation() -> None:
    env = make_run_env()
    second = _workspace(env, "second")
    _workspace(env, "idle")  # no run: last either way
    first_run = env.create_run(env.upload_config(workspace_id=second), workspace_id=second)
    env.create_run(env.upload_config())  # `app`'s run, after `second`'s
    assert first_run["id"]

    def order(query: str) -> list[str]:
        answer = env.api("GET", f"/organizations/acme/workspaces?include=current_run&sort={query}")
        assert answer.status_code == 200, answer.text
        return [ws["attributes"]["name"] for ws in answer.json()["data"]]

    assert order("current-run.created-at") == ["second", "app", "idle"]
    assert order("-current-run.created-at") == ["app", "second", "idle"]
