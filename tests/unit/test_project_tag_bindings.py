"""Projects as HCP Terraform holds them for the newest clients: key-value tag bindings their workspaces inherit
(`effective-tag-bindings`, the `filter[tagged]` of a `cloud` block), reserved tag keys that lock an inherited key,
moving workspaces into a project, and a project's default execution mode and agent pool (`setting-overwrites`)."""

from __future__ import annotations

from typing import Any

import pytest
from run_helpers import RunEnv, make_run_env


@pytest.fixture(scope="module")
def env() -> RunEnv:
    return make_run_env()


def _bindings(**pairs: str) -> list[dict[str, Any]]:
    return [{"type": "tag-bindings", "attributes": {"key": k, "value": v}} for k, v in pairs.items()]


def _pairs(response: Any) -> list[tuple[str, str]]:
    assert response.status_code == 200, response.text
    return [(b["attributes"]["key"], b["attributes"]["value"]) for b in response.json()["data"]]


def _project(env: RunEnv, name: str, attributes: dict[str, Any] | None = None, /, **bindings: str) -> Any:
    data: dict[str, Any] = {"type": "projects", "attributes": {"name": name, **(attributes or {})}}
    if bindings:
        data["relationships"] = {"tag-bindings": {"data": _bindings(**bindings)}}
    return env.api("POST", "/organizations/acme/projects", {"data": data})


def _workspace(env: RunEnv, name: str) -> str:
    created = env.api("POST", "/organizations/acme/workspaces", {"data": {"type": "workspaces", "attributes": {
        "name": name}}})  # fmt: skip
    assert created.status_code == 201, created.text
    return str(created.json()["data"]["id"])


def _move(env: RunEnv, project_id: str, *workspace_ids: str) -> Any:
    body = {"data": [{"type": "workspaces", "id": ws_id} for ws_id in workspace_ids]}
    return env.api("POST", f"/projects/{project_id}/relationships/workspaces", body)


def _ws_names(env: RunEnv, query: str) -> list[str]:
    response = env.api("GET", f"/organizations/acme/workspaces?{query}")
    assert response.status_code == 200, response.text
    return sorted(ws["attributes"]["name"] for ws in response.json()["data"])


def test_a_projects_tag_bindings_are_inherited_by_its_workspaces(env: RunEnv) -> None:
    created = _project(env, "payments", None, **{"env": "prod", "team": "pay"})
    assert created.status_code == 201, created.text
    project = created.json()["data"]["id"]
    assert _pairs(env.api("GET", f"/projects/{project}/tag-bindings")) == [("env", "prod"), ("team", "pay")]
    assert _pairs(env.api("GET", f"/projects/{project}/effective-tag-bindings")) == [("env", "prod"), ("team", "pay")]
    read = env.api("GET", f"/projects/{project}?include=effective_tag_bindings").json()
    assert [i["attributes"]["key"] for i in read["included"]] == ["env", "team"]
    assert len(read["data"]["relationships"]["effective-tag-bindings"]["data"]) == 2

    inside, outside = _workspace(env, "pay-api"), _workspace(env, "pay-outside")
    assert _move(env, project, inside).status_code == 204
    assert env.api("GET", f"/workspaces/{inside}").json()["data"]["relationships"]["project"]["data"]["id"] == project
    env.api("PATCH", f"/workspaces/{inside}/tag-bindings", {"data": _bindings(team="api", tier="1")})
    assert _pairs(env.api("GET", f"/workspaces/{inside}/tag-bindings")) == [("team", "api"), ("tier", "1")]
    effective = _pairs(env.api("GET", f"/workspaces/{inside}/effective-tag-bindings"))
    assert effective == [("env", "prod"), ("team", "api"), ("tier", "1")]  # its own value of `team` wins

    # the `cloud` block's `tags = { env = "prod" }` finds workspaces by what they inherit
    tagged = "filter%5Btagged%5D%5B0%5D%5Bkey%5D=env&filter%5Btagged%5D%5B0%5D%5Bvalue%5D=prod"
    assert _ws_names(env, tagged) == ["pay-api"]
    assert _ws_names(env, f"search%5Btags%5D=env&{tagged}") == ["pay-api"]  # terraform >= 1.10 sends both
    assert "pay-outside" not in _ws_names(env, tagged) and outside
    key_only = "filter%5Btagged%5D%5B0%5D%5Bkey%5D=team&filter%5Btagged%5D%5B0%5D%5Bvalue%5D="
    assert _ws_names(env, key_only) == ["pay-api"]  # go-tfe sends an empty value for a key alone
    projects = env.api("GET", f"/organizations/acme/projects?{key_only}").json()["data"]
    assert [p["attributes"]["name"] for p in projects] == ["payments"]

    # PATCH adds and changes; DELETE removes them all; PATCH /projects/:id with bindings replaces them
    added = env.api("PATCH", f"/projects/{project}/tag-bindings", {"data": _bindings(**{"env": "stage", "cost": "7"})})
    assert _pairs(added) == [("env", "stage"), ("team", "pay"), ("cost", "7")]
    assert env.api("DELETE", f"/projects/{project}/tag-bindings").status_code == 204
    assert _pairs(env.api("GET", f"/projects/{project}/tag-bindings")) == []
    replace = {"data": {"type": "projects", "relationships": {"tag-bindings": {"data": _bindings(x="1")}}}}
    assert env.api("PATCH", f"/projects/{project}", replace).status_code == 200
    assert _pairs(env.api("GET", f"/workspaces/{inside}/effective-tag-bindings"))[0] == ("x", "1")


def test_bindings_are_bounded_and_moves_are_checked_before_any_happens(env: RunEnv) -> None:
    eleven = {f"k{i}": "v" for i in range(11)}
    too_many = _project(env, "crowded", **eleven)
    assert too_many.status_code == 422 and "cannot exceed 10 bindings" in too_many.text
    ws = _workspace(env, "crowded-ws")
    refused = env.api("PATCH", f"/workspaces/{ws}/tag-bindings", {"data": _bindings(**eleven)})
    assert refused.status_code == 422 and "cannot exceed 10 bindings" in refused.text
    target = _project(env, "target").json()["data"]["id"]
    assert _move(env, target, ws, "ws-doesnotexist0000").status_code == 404
    assert env.api("GET", f"/workspaces/{ws}").json()["data"]["relationships"]["project"]["data"]["id"] != target
    assert _move(env, "prj-doesnotexist0000", ws).status_code == 404
    assert _move(env, target, *[ws] * 101).status_code == 422  # bounded before anything is read
    bad = env.api("PATCH", "/projects/" + target, {"data": {"type": "projects", "relationships": {
        "tag-bindings": {"data": [{"attributes": {"key": ""}}]}}}})  # fmt: skip
    assert bad.status_code == 422


def test_reserved_tag_keys_and_a_locked_inherited_key(env: RunEnv) -> None:
    def reserve(key: Any, disable: bool = True) -> Any:
        body = {"data": {"type": "reserved-tag-keys", "attributes": {"key": key, "disable-overrides": disable}}}
        return env.api("POST", "/organizations/acme/reserved-tag-keys", body)

    created = reserve("region")
    assert created.status_code == 201, created.text
    rtk = created.json()["data"]
    assert rtk["id"].startswith("rtk-") and rtk["attributes"]["disable-overrides"] is True
    taken = reserve("region", False)
    assert taken.status_code == 422 and "Key has already been taken" in taken.text
    assert reserve("! / nope").status_code == 422 and "Key is invalid" in reserve("! / nope").text
    assert reserve(None).status_code == 422
    other = reserve("owner", False).json()["data"]
    listed = env.api("GET", "/organizations/acme/reserved-tag-keys").json()
    assert sorted(r["attributes"]["key"] for r in listed["data"]) == ["owner", "region"]
    assert listed["meta"]["pagination"]["total-count"] == 2

    renamed = env.api("PATCH", f"/reserved-tag-keys/{other['id']}", {"data": {"type": "reserved-tag-keys",
        "attributes": {"key": "owner-team", "disable-overrides": False}}})  # fmt: skip
    assert renamed.status_code == 200 and renamed.json()["data"]["attributes"]["key"] == "owner-team"
    clash = env.api("PATCH", f"/reserved-tags/{other['id']}", {"data": {"type": "reserved-tag-keys",
        "attributes": {"key": "region"}}})  # fmt: skip
    assert clash.status_code == 422 and "Key has already been taken" in clash.text

    # `region` is locked: a workspace of a project binding it may not bind it to another value
    project = _project(env, "eu-apps", region="eu", owner="ops").json()["data"]["id"]
    ws = _workspace(env, "eu-api")
    assert _move(env, project, ws).status_code == 204
    locked = env.api("PATCH", f"/workspaces/{ws}/tag-bindings", {"data": _bindings(region="us")})
    assert locked.status_code == 422 and "region" in locked.text
    assert env.api("PATCH", f"/workspaces/{ws}/tag-bindings", {"data": _bindings(region="eu")}).status_code == 200
    assert env.api("PATCH", f"/workspaces/{ws}/tag-bindings", {"data": _bindings(owner="me")}).status_code == 200
    # a workspace whose own value clashes cannot move into the project either
    elsewhere = _workspace(env, "us-api")
    env.api("PATCH", f"/workspaces/{elsewhere}/tag-bindings", {"data": _bindings(region="us")})
    assert _move(env, project, elsewhere).status_code == 422

    assert env.api("DELETE", f"/reserved-tag-keys/{rtk['id']}").status_code == 204
    assert env.api("DELETE", f"/reserved-tag-keys/{rtk['id']}").status_code == 404
    assert env.api("PATCH", f"/workspaces/{ws}/tag-bindings", {"data": _bindings(region="us")}).status_code == 200


def test_a_projects_default_execution_mode_and_agent_pool(env: RunEnv) -> None:
    pool = env.api("POST", "/organizations/acme/agent-pools", {"data": {"type": "agent-pools", "attributes": {
        "name": "project-pool"}}}).json()["data"]["id"]  # fmt: skip

    def refused(attributes: dict[str, Any], words: str) -> None:
        answer = _project(env, "refused", attributes)
        assert answer.status_code == 422 and words in answer.text, answer.text

    refused({"default-execution-mode": "agent"}, "must be specified when using 'agent' execution mode")
    refused({"default-execution-mode": "local", "default-agent-pool-id": pool}, "must not be specified unless")
    refused({"default-execution-mode": "agent", "default-agent-pool-id": "apool-nope"}, "not found")
    refused({"default-execution-mode": "elsewhere"}, "default-execution-mode")
    refused({"default-execution-mode": "agent", "default-agent-pool-id": pool,
             "setting-overwrites": {"default-execution-mode": True, "default-agent-pool": False}},
            "their values must be the same")  # fmt: skip

    inherited = _project(env, "inherits").json()["data"]
    assert inherited["attributes"]["default-execution-mode"] == "remote"  # the organization's
    assert inherited["attributes"]["setting-overwrites"] == {"default-execution-mode": False,
                                                             "default-agent-pool": False}  # fmt: skip
    agent = _project(env, "on-agents", {"default-execution-mode": "agent", "default-agent-pool-id": pool})
    assert agent.status_code == 201, agent.text
    project = agent.json()["data"]
    assert project["attributes"]["default-execution-mode"] == "agent"
    assert project["relationships"]["default-agent-pool"]["data"]["id"] == pool
    assert project["attributes"]["setting-overwrites"]["default-execution-mode"] is True

    def update(attributes: dict[str, Any]) -> dict[str, Any]:
        body = {"data": {"type": "projects", "attributes": attributes}}
        answer = env.api("PATCH", f"/projects/{project['id']}", body)
        assert answer.status_code == 200, answer.text
        return dict(answer.json()["data"])

    # its workspaces that do not overwrite the mode inherit it, with its pool; one that overwrites keeps its own
    inheriting, own = _workspace(env, "on-agents-ws"), _workspace(env, "own-mode-ws")
    env.api("PATCH", f"/workspaces/{own}", {"data": {"type": "workspaces", "attributes": {"execution-mode": "local"}}})
    assert _move(env, project["id"], inheriting, own).status_code == 204
    listed = {w["id"]: w for w in env.api("GET", "/organizations/acme/workspaces?page%5Bsize%5D=100").json()["data"]}
    for read in (env.api("GET", f"/workspaces/{inheriting}").json()["data"], listed[inheriting]):
        assert read["attributes"]["execution-mode"] == "agent" and read["attributes"]["agent-pool-id"] == pool
        assert read["relationships"]["agent-pool"]["data"]["id"] == pool
    assert env.api("GET", f"/workspaces/{own}").json()["data"]["attributes"]["execution-mode"] == "local"
    owner = env.container.accounts.authenticate(env.headers["Authorization"].removeprefix("Bearer "))
    assert env.container.workspaces.agent_pool(env.container.workspaces.get(owner, inheriting)) == pool

    remote = update({"default-execution-mode": "remote"})
    assert env.api("GET", f"/workspaces/{inheriting}").json()["data"]["attributes"]["execution-mode"] == "remote"
    assert remote["attributes"]["default-execution-mode"] == "remote"
    assert remote["relationships"]["default-agent-pool"]["data"] is None  # leaving the agent mode leaves its pool
    back = update({"setting-overwrites": {"default-execution-mode": False, "default-agent-pool": False}})
    assert back["attributes"]["default-execution-mode"] == "remote"
    assert back["attributes"]["setting-overwrites"]["default-execution-mode"] is False
    assert env.api("GET", f"/projects/{project['id']}").json()["data"] == back


def test_team_project_access_takes_the_variable_sets_permission(env: RunEnv) -> None:
    team = env.api("POST", "/organizations/acme/teams", {"data": {"type": "teams", "attributes": {"name": "vs-team"}}})
    project = _project(env, "varsets-prj").json()["data"]["id"]
    body = {"data": {"type": "team-projects", "attributes": {"access": "custom", "project-access": {
        "settings": "read", "teams": "none", "variable-sets": "write"}},
        "relationships": {"team": {"data": {"type": "teams", "id": team.json()["data"]["id"]}},
                          "project": {"data": {"type": "projects", "id": project}}}}}  # fmt: skip
    added = env.api("POST", "/team-projects", body)
    assert added.status_code == 201, added.text
    assert added.json()["data"]["attributes"]["project-access"]["variable-sets"] == "write"
    grant = added.json()["data"]["id"]
    change = {"data": {"type": "team-projects", "attributes": {"project-access": {"variable-sets": "read"}}}}
    assert env.api("PATCH", f"/team-projects/{grant}", change).json()["data"]["attributes"]["project-access"][
        "variable-sets"] == "read"  # fmt: skip
    wrong = {"data": {"type": "team-projects", "attributes": {"project-access": {"variable-sets": "own"}}}}
    assert env.api("PATCH", f"/team-projects/{grant}", wrong).status_code == 422
