"""Variable sets through the API (go-tfe's shapes), on the in-memory adapters: sets and their variables, where
they apply, what a run records once (with its sources, secrets never in clear), `all-vars`, who may see what,
bad input that writes nothing, and deletions that leave no attachment behind."""

from __future__ import annotations

import json
from typing import Any

from run_helpers import RunEnv, make_run_env
from table_items import memory_items
from test_permission_matrix import _api, _grant, _team, _user


def _ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json() if response.content else None


def _set(env: RunEnv, name: str, org: str = "acme", **attrs: Any) -> dict[str, Any]:
    body = {"data": {"type": "varsets", "attributes": {"name": name, "global": False, **attrs}}}
    return dict(_ok(env.api("POST", f"/organizations/{org}/varsets", body), 201)["data"])


def _var(env: RunEnv, varset_id: str, key: str, value: str, status: int = 201, **attrs: Any) -> Any:
    attributes = {"key": key, "value": value, "category": "terraform", **attrs}
    return _ok(env.api("POST", f"/varsets/{varset_id}/relationships/vars", {"data": {"type": "vars",
               "attributes": attributes}}), status)  # fmt: skip


def _apply(env: RunEnv, varset_id: str, kind: str, ids: list[str], method: str = "POST") -> Any:
    return env.api(
        method, f"/varsets/{varset_id}/relationships/{kind}", {"data": [{"type": kind, "id": i} for i in ids]}
    )


def _default_project(env: RunEnv) -> str:
    projects = env.api("GET", "/organizations/acme/projects").json()["data"]
    return str(next(p["id"] for p in projects if p["attributes"]["name"] == "Default Project"))


def _workspace(env: RunEnv, name: str, **attrs: Any) -> str:
    body = {"data": {"type": "workspaces", "attributes": {"name": name, "execution-mode": "remote", **attrs}}}
    return str(_ok(env.api("POST", "/organizations/acme/workspaces", body), 201)["data"]["id"])


def test_a_set_reads_back_as_created_with_its_relationships_and_includes() -> None:
    env = make_run_env()
    vs = _set(env, "creds", description="cloud credentials")
    assert vs["type"] == "varsets" and vs["id"].startswith("varset-")
    assert vs["attributes"] | {"global": False, "priority": False, "name": "creds"} == vs["attributes"]
    assert vs["relationships"]["organization"]["data"] == {"type": "organizations", "id": "acme"}
    var = _var(env, vs["id"], "region", "eu-west-1")["data"]
    assert var["relationships"]["varset"]["data"] == {"type": "varsets", "id": vs["id"]}
    assert _ok(_apply(env, vs["id"], "workspaces", [env.workspace_id]), 204) is None
    read = _ok(env.api("GET", f"/varsets/{vs['id']}?include=vars,workspaces"))
    assert read["data"]["relationships"]["workspaces"]["data"] == [{"type": "workspaces", "id": env.workspace_id}]
    assert read["data"]["relationships"]["vars"]["data"] == [{"type": "vars", "id": var["id"]}]
    included = {(i["type"], i["id"]): i["attributes"] for i in read["included"]}
    assert included[("vars", var["id"])]["value"] == "eu-west-1"
    assert included[("workspaces", env.workspace_id)]["name"] == "app"
    # listing: q, pagination; a workspace's and a project's sets
    _set(env, "other")
    names = lambda path: [d["attributes"]["name"] for d in _ok(env.api("GET", path))["data"]]  # noqa: E731
    assert names("/organizations/acme/varsets") == ["creds", "other"]
    assert names("/organizations/acme/varsets?q=RED") == ["creds"]
    page = _ok(env.api("GET", "/organizations/acme/varsets?page[size]=1&page[number]=2"))
    assert [d["attributes"]["name"] for d in page["data"]] == ["other"]
    assert page["meta"]["pagination"]["total-count"] == 2
    assert names(f"/workspaces/{env.workspace_id}/varsets") == ["creds"]
    project = _default_project(env)
    _ok(_apply(env, page["data"][0]["id"], "projects", [project]), 204)
    assert names(f"/projects/{project}/varsets") == ["other"]
    assert names(f"/workspaces/{env.workspace_id}/varsets") == ["creds", "other"]  # through its project
    # update (go-tfe's UpdateWorkspaces: global false and the workspaces replaced), then delete
    body = {"data": {"type": "varsets", "attributes": {"global": False}, "relationships": {"workspaces": {"data": []}}}}
    updated = _ok(env.api("PATCH", f"/varsets/{vs['id']}?include=workspaces", body))["data"]
    assert updated["relationships"]["workspaces"]["data"] == []
    renamed = _ok(env.api("PATCH", f"/varsets/{vs['id']}", {"data": {"type": "varsets", "attributes": {
        "name": "renamed", "priority": True}}}))["data"]["attributes"]  # fmt: skip
    assert (renamed["name"], renamed["priority"]) == ("renamed", True)
    assert _ok(env.api("DELETE", f"/varsets/{vs['id']}"), 204) is None
    assert env.api("GET", f"/varsets/{vs['id']}").status_code == 404
    assert env.api("GET", f"/varsets/{vs['id']}/relationships/vars/{var['id']}").status_code == 404
    assert var["id"] not in repr(memory_items(env.container.table))


def test_set_variables_follow_the_workspace_variable_rules() -> None:
    env = make_run_env()
    vs = _set(env, "creds")["id"]
    secret = _var(env, vs, "password", "hunter2", sensitive=True)["data"]
    assert secret["attributes"]["value"] is None
    assert _var(env, vs, "password", "again", status=422)["errors"][0]["source"]["pointer"] == "/data/attributes/key"
    _var(env, vs, "password", "env is another category", category="env")
    _var(env, vs, "bad\nkey", "x", status=422)
    _var(env, vs, "k", "x", status=422, category="nope")
    long = "x" * 513
    _var(env, vs, "k", "x", status=422, description=long)
    unhide = {"data": {"type": "vars", "attributes": {"sensitive": False}}}
    assert env.api("PATCH", f"/varsets/{vs}/relationships/vars/{secret['id']}", unhide).status_code == 422
    plain = _var(env, vs, "region", "eu")["data"]
    taken = {"data": {"type": "vars", "attributes": {"key": "password"}}}
    assert env.api("PATCH", f"/varsets/{vs}/relationships/vars/{plain['id']}", taken).status_code == 422
    hcl = {"data": {"type": "vars", "attributes": {"key": "regions", "value": '["eu"]', "hcl": True}}}
    changed = _ok(env.api("PATCH", f"/varsets/{vs}/relationships/vars/{plain['id']}", hcl))["data"]["attributes"]
    assert (changed["key"], changed["hcl"], changed["value"]) == ("regions", True, '["eu"]')
    listed = _ok(env.api("GET", f"/varsets/{vs}/relationships/vars"))["data"]
    assert sorted((v["attributes"]["category"], v["attributes"]["key"]) for v in listed) == [
        ("env", "password"), ("terraform", "password"), ("terraform", "regions")]  # fmt: skip
    assert _ok(env.api("DELETE", f"/varsets/{vs}/relationships/vars/{plain['id']}"), 204) is None
    assert "hunter2" not in repr(memory_items(env.container.table))


def test_bad_input_writes_nothing() -> None:
    env = make_run_env()
    vs = _set(env, "creds")
    assert env.api("POST", "/organizations/acme/varsets", {"data": {"type": "varsets", "attributes": {
        "name": "creds", "global": False}}}).status_code == 422  # fmt: skip
    assert env.api("POST", "/organizations/acme/varsets", {"data": {"type": "varsets", "attributes": {
        "global": False}}}).status_code == 422  # fmt: skip
    duplicate_vars = {
        "data": [
            {"type": "vars", "attributes": {"key": "a", "value": "1", "category": "env"}},
            {"type": "vars", "attributes": {"key": "a", "value": "2", "category": "env"}},
        ]
    }
    body = {"data": {"type": "varsets", "attributes": {"name": "dup", "global": False},
                     "relationships": {"vars": duplicate_vars}}}  # fmt: skip
    assert env.api("POST", "/organizations/acme/varsets", body).status_code == 422
    body["data"]["relationships"] = {"workspaces": {"data": [{"type": "workspaces", "id": "ws-doesnotexist1234"}]}}
    assert env.api("POST", "/organizations/acme/varsets", body).status_code == 404
    assert [d["attributes"]["name"] for d in env.api("GET", "/organizations/acme/varsets").json()["data"]] == ["creds"]
    # an unknown workspace among good ones: 404, none applied
    second = _workspace(env, "second")
    assert _apply(env, vs["id"], "workspaces", [second, "ws-doesnotexist1234"]).status_code == 404
    assert _apply(env, vs["id"], "projects", ["prj-doesnotexist1234"]).status_code == 404
    assert _apply(env, vs["id"], "workspaces", []).status_code == 422
    read = env.api("GET", f"/varsets/{vs['id']}").json()["data"]
    assert read["relationships"]["workspaces"]["data"] == [] and read["relationships"]["projects"]["data"] == []
    # another organization's workspace is unknown here
    olga = _user(env, "olga", None)
    _api(env, olga, "POST", "/organizations", {"data": {"type": "organizations", "attributes": {
        "name": "other", "email": "o@example.com"}}})  # fmt: skip
    other = _api(env, olga, "POST", "/organizations/other/workspaces", {"data": {"type": "workspaces",
                 "attributes": {"name": "theirs"}}}).json()["data"]["id"]  # fmt: skip
    assert _apply(env, vs["id"], "workspaces", [other]).status_code == 404
    # a global set is not applied to some workspaces
    glob = _set(env, "everywhere", **{"global": True})
    assert _apply(env, glob["id"], "workspaces", [second]).status_code == 422
    assert env.api("GET", "/varsets/varset-doesnotexist12").status_code == 404


def test_a_run_records_its_variables_once_with_their_sources() -> None:
    env = make_run_env()
    ws = env.workspace_id
    project = _default_project(env)
    everywhere = _set(env, "everywhere", **{"global": True})["id"]
    _var(env, everywhere, "region", "from-global")
    _var(env, everywhere, "AWS_SECRET", "g-secret", category="env", sensitive=True)
    by_project = _set(env, "by-project")["id"]
    _var(env, by_project, "region", "from-project")
    _var(env, by_project, "size", "from-project")
    _ok(_apply(env, by_project, "projects", [project]), 204)
    a_set, b_set = _set(env, "A_set")["id"], _set(env, "B_set")["id"]
    _var(env, a_set, "size", "from-A")
    _var(env, b_set, "size", "from-B")
    _var(env, b_set, "zone", "from-B")
    for vs in (a_set, b_set):
        _ok(_apply(env, vs, "workspaces", [ws]), 204)
    own = {"data": {"type": "vars", "attributes": {"key": "zone", "value": "from-workspace", "category": "terraform"}}}
    _ok(env.api("POST", f"/workspaces/{ws}/vars", own), 201)
    forced = _set(env, "forced", priority=True)["id"]
    _var(env, forced, "pinned", '"from-priority"', hcl=True)
    _ok(_apply(env, forced, "workspaces", [ws]), 204)

    # all-vars: the workspace's effective variables and where each comes from
    effective = _ok(env.api("GET", f"/workspaces/{ws}/all-vars"))["data"]
    # `configurable` is the workspace (go-tfe's ListAll reads it as one); `varset` names a set's variable's source
    assert {v["relationships"]["configurable"]["data"]["type"] for v in effective} == {"workspaces"}
    seen = {(v["attributes"]["category"], v["attributes"]["key"]): (v["attributes"]["value"],
            v["relationships"].get("varset", v["relationships"]["configurable"])["data"])
            for v in effective}  # fmt: skip
    assert seen[("terraform", "region")] == ("from-project", {"type": "varsets", "id": by_project})
    assert seen[("terraform", "size")] == ("from-A", {"type": "varsets", "id": a_set})
    assert seen[("terraform", "zone")] == ("from-workspace", {"type": "workspaces", "id": ws})
    assert seen[("env", "AWS_SECRET")] == (None, {"type": "varsets", "id": everywhere})

    run = env.create_run(env.upload_config(), variables=[{"key": "pinned", "value": '"from-run"'},
                                                         {"key": "zone", "value": '"from-run"'}])  # fmt: skip
    # changed after the run was created: the run keeps what it resolved
    env.api("PATCH", f"/varsets/{a_set}", {"data": {"type": "varsets", "attributes": {"name": "Z_set"}}})
    _var(env, everywhere, "late", "too-late")
    spec = env.work_next()
    given = {(v["category"], v["key"]): v["value"] for v in spec["variables"]}
    assert given == {
        ("terraform", "region"): "from-project",
        ("terraform", "size"): "from-A",
        ("terraform", "zone"): '"from-run"',  # -var beats the workspace's variable
        ("terraform", "pinned"): '"from-priority"',  # a priority set beats -var
        ("env", "AWS_SECRET"): "g-secret",
    }
    stored = env.container.run_store.load(run["id"])
    sources = {e["key"]: (e["source"]["type"], e["source"]["name"]) for e in stored.resolved_variables or []}
    assert sources == {"AWS_SECRET": ("varsets", "everywhere"), "pinned": ("varsets", "forced"), "region": (
        "varsets", "by-project"), "size": ("varsets", "A_set"), "zone": ("runs", "run")}  # fmt: skip
    assert "g-secret" not in repr(memory_items(env.container.table))
    assert "g-secret" not in json.dumps(env.run(run["id"]))


def test_who_sees_what() -> None:
    env = make_run_env()
    ws = env.workspace_id
    vs = _set(env, "creds")["id"]
    _var(env, vs, "token", "t0p", sensitive=True)
    _var(env, vs, "region", "eu")
    _ok(_apply(env, vs, "workspaces", [ws]), 204)
    reader, manager, member = _user(env, "reader"), _user(env, "manager"), _user(env, "member")
    _grant(env, "team-workspaces", _team(env, "readers", members=("reader",)), ("workspace", ws), {"access": "read"})
    _team(env, "managers", {"manage-workspaces": True}, ("manager",))
    # a workspace reader sees names and sources of what reaches the workspace, never a sensitive value
    effective = _ok(_api(env, reader, "GET", f"/workspaces/{ws}/all-vars"))["data"]
    assert {v["attributes"]["key"]: v["attributes"]["value"] for v in effective} == {"token": None, "region": "eu"}
    assert [d["id"] for d in _ok(_api(env, reader, "GET", f"/workspaces/{ws}/varsets"))["data"]] == [vs]
    # ...but neither the organization's sets nor a set by id, nor may they change one
    assert _api(env, reader, "GET", "/organizations/acme/varsets").status_code == 403
    absent = _api(env, reader, "GET", "/varsets/varset-doesnotexist12")
    hidden = _api(env, reader, "GET", f"/varsets/{vs}")
    assert hidden.status_code == absent.status_code == 404
    assert hidden.json()["errors"][0]["detail"].replace(vs, "X") == absent.json()["errors"][0]["detail"].replace(
        "varset-doesnotexist12", "X")  # fmt: skip
    assert _api(env, reader, "DELETE", f"/varsets/{vs}").status_code == 404
    # a member without grants sees none of it
    assert _api(env, member, "GET", f"/workspaces/{ws}/all-vars").status_code == 404
    # manage-workspaces manages sets
    made = _api(env, manager, "POST", "/organizations/acme/varsets", {"data": {"type": "varsets", "attributes": {
        "name": "managed", "global": True}}})  # fmt: skip
    assert made.status_code == 201, made.text
    assert _api(env, manager, "GET", f"/varsets/{vs}/relationships/vars").status_code == 200


def test_deleting_a_workspace_project_or_organization_leaves_no_attachment() -> None:
    env = make_run_env()
    doomed = _workspace(env, "doomed")
    project = _ok(env.api("POST", "/organizations/acme/projects", {"data": {"type": "projects", "attributes": {
        "name": "temporary"}}}), 201)["data"]["id"]  # fmt: skip
    vs = _set(env, "creds")["id"]
    _var(env, vs, "region", "eu")
    _ok(_apply(env, vs, "workspaces", [env.workspace_id, doomed]), 204)
    _ok(_apply(env, vs, "projects", [project]), 204)
    _ok(env.api("DELETE", f"/workspaces/{doomed}"), 204)
    _ok(env.api("DELETE", f"/projects/{project}"), 204)
    rel = env.api("GET", f"/varsets/{vs}").json()["data"]["relationships"]
    assert rel["workspaces"]["data"] == [{"type": "workspaces", "id": env.workspace_id}]
    assert rel["projects"]["data"] == []
    _ok(env.api("DELETE", "/organizations/acme"), 204)
    assert vs not in repr(memory_items(env.container.table))
