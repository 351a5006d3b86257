"""Workspace settings TFC clients send and read: inherited execution mode (setting-overwrites), deletes of
locked workspaces, safe-delete, plain attributes, include=, and remote state consumers enforced for run tokens."""

from __future__ import annotations

from typing import Any

from run_helpers import RunEnv, make_run_env
from state_helpers import null_resource, state_bytes, sv_body


def _workspace(env: RunEnv, name: str, **attributes: Any) -> dict[str, Any]:
    body = {"data": {"type": "workspaces", "attributes": {"name": name, **attributes}}}
    response = env.api("POST", "/organizations/acme/workspaces", body)
    assert response.status_code == 201, response.text
    return dict(response.json()["data"])


def _attrs(env: RunEnv, ws_id: str) -> dict[str, Any]:
    return dict(env.api("GET", f"/workspaces/{ws_id}").json()["data"]["attributes"])


def _push_state(env: RunEnv, ws_id: str, resources: int, serial: int = 1) -> None:
    raw = state_bytes(
        serial,
        outputs={"o": {"value": "v", "type": "string"}},
        resources=[null_resource(f"r{i}", str(i)) for i in range(resources)],
    )
    body = sv_body(raw, serial)
    assert env.api("POST", f"/workspaces/{ws_id}/actions/lock", {}).status_code == 200
    response = env.api("POST", f"/workspaces/{ws_id}/state-versions", body)
    assert response.status_code == 201, response.text
    assert env.api("POST", f"/workspaces/{ws_id}/actions/unlock").status_code == 200


def test_execution_mode_follows_the_organization_default_until_overwritten() -> None:
    env = make_run_env()
    inheriting = _workspace(env, "inherits")
    own = _workspace(env, "own", **{"execution-mode": "remote"})
    assert inheriting["attributes"]["setting-overwrites"]["execution-mode"] is False
    assert own["attributes"]["setting-overwrites"]["execution-mode"] is True
    org = {"data": {"type": "organizations", "attributes": {"default-execution-mode": "local"}}}
    assert env.api("PATCH", "/organizations/acme", org).status_code == 200
    assert _attrs(env, inheriting["id"])["execution-mode"] == "local"
    assert _attrs(env, inheriting["id"])["operations"] is False
    assert _attrs(env, own["id"])["execution-mode"] == "remote"
    back = {"data": {"type": "workspaces", "attributes": {"setting-overwrites": {"execution-mode": False}}}}
    assert env.api("PATCH", f"/workspaces/{own['id']}", back).status_code == 200
    assert _attrs(env, own["id"])["execution-mode"] == "local"


def test_locked_workspace_deletes_and_safe_delete_refuses_managed_resources_and_locks() -> None:
    env = make_run_env()
    locked = _workspace(env, "locked")
    assert env.api("POST", f"/workspaces/{locked['id']}/actions/lock", {}).status_code == 200
    refused = env.api("POST", f"/workspaces/{locked['id']}/actions/safe-delete")
    assert refused.status_code == 409 and "currently locked" in refused.text  # what go-tfe's SafeDelete test expects
    assert env.api("DELETE", f"/workspaces/{locked['id']}").status_code == 204  # force delete: locked or not
    assert env.api("GET", f"/workspaces/{locked['id']}").status_code == 404
    managed = _workspace(env, "managed")
    _push_state(env, managed["id"], resources=2)
    refused = env.api("POST", f"/workspaces/{managed['id']}/actions/safe-delete")
    assert refused.status_code == 409, refused.text
    _push_state(env, managed["id"], resources=0, serial=2)
    assert env.api("POST", f"/workspaces/{managed['id']}/actions/safe-delete").status_code == 204
    forced = _workspace(env, "forced")
    _push_state(env, forced["id"], resources=1)
    assert env.api("POST", f"/workspaces/{forced['id']}/actions/lock", {}).status_code == 200
    assert env.api("DELETE", f"/workspaces/{forced['id']}").status_code == 204


def test_plain_attributes_are_stored_and_returned() -> None:
    env = make_run_env()
    sent = {
        "trigger-patterns": ["/modules/**/*"],
        "trigger-prefixes": ["/shared"],
        "file-triggers-enabled": True,
        "source-name": "my-app",
        "source-url": "https://example.com/app",
        "queue-all-runs": True,
        "speculative-enabled": False,
        "assessments-enabled": True,
        "auto-apply-run-trigger": True,
    }
    created = _workspace(env, "attrs", **sent)
    for attrs in (created["attributes"], _attrs(env, created["id"])):
        assert {key: attrs[key] for key in sent} == sent


def test_include_organization_current_run_state_version_and_outputs() -> None:
    env = make_run_env()
    _push_state(env, env.workspace_id, resources=1)
    run = env.create_run(env.upload_config())
    query = "include=organization,current_run,current_state_version,outputs"
    body = env.api("GET", f"/workspaces/{env.workspace_id}?{query}").json()
    assert body["data"]["attributes"]["workspace-kpis-runs-count"] == 1
    kinds = {(item["type"], item["id"]) for item in body["included"]}
    assert ("organizations", "acme") in kinds
    assert ("runs", run["id"]) in kinds
    sv = body["data"]["relationships"]["current-state-version"]["data"]["id"]
    assert ("state-versions", sv) in kinds
    assert body["data"]["relationships"]["outputs"]["data"] == [
        {"type": i["type"], "id": i["id"]} for i in body["included"] if i["type"] == "workspace-outputs"
    ]
    listed = env.api("GET", f"/organizations/acme/workspaces?{query}").json()
    assert ("organizations", "acme") in {(item["type"], item["id"]) for item in listed["included"]}
    assert "included" not in env.api("GET", f"/workspaces/{env.workspace_id}?include=").json()


def test_remote_state_consumers_decide_what_a_run_token_may_read() -> None:
    env = make_run_env()
    source = _workspace(env, "source")
    bystander = _workspace(env, "bystander")
    _push_state(env, source["id"], resources=1)
    refs = {"data": [{"type": "workspaces", "id": env.workspace_id}]}
    path = f"/workspaces/{source['id']}/relationships/remote-state-consumers"
    env.create_run(env.upload_config())
    token = {"Authorization": f"Bearer {env.claim()['run_token']}"}
    read = lambda: env.client.get(f"/api/v2/workspaces/{source['id']}/current-state-version", headers=token)  # noqa: E731
    assert read().status_code == 404
    assert env.api("POST", path, refs).status_code == 204
    assert [ws["id"] for ws in env.api("GET", path).json()["data"]] == [env.workspace_id]
    assert read().status_code == 200
    outputs = env.client.get(f"/api/v2/workspaces/{source['id']}/current-state-version-outputs", headers=token)
    assert outputs.status_code == 200
    replace = {"data": [{"type": "workspaces", "id": bystander["id"]}]}
    assert env.api("PATCH", path, replace).status_code == 204
    assert [ws["id"] for ws in env.api("GET", path).json()["data"]] == [bystander["id"]]
    assert read().status_code == 404
    remove = env.client.request("DELETE", f"/api/v2{path}", json=replace, headers=env.headers)
    assert remove.status_code == 204
    assert env.api("GET", path).json()["data"] == []
    shared = {"data": {"type": "workspaces", "attributes": {"global-remote-state": True}}}
    assert env.api("PATCH", f"/workspaces/{source['id']}", shared).status_code == 200
    assert read().status_code == 200
    assert env.api("POST", path, {"data": [{"type": "workspaces", "id": "ws-missing"}]}).status_code == 404


def test_project_remote_state_shares_with_the_projects_workspaces_only() -> None:
    env = make_run_env()
    project = env.api("POST", "/organizations/acme/projects", {"data": {"type": "projects", "attributes": {
        "name": "shared"}}}).json()["data"]["id"]  # fmt: skip
    source, sibling = _workspace(env, "source"), _workspace(env, "sibling")
    moved = {"data": [{"type": "workspaces", "id": ws_id} for ws_id in (source["id"], sibling["id"])]}
    assert env.api("POST", f"/projects/{project}/relationships/workspaces", moved).status_code == 204
    _push_state(env, source["id"], resources=1)
    path = f"/workspaces/{source['id']}/relationships/remote-state-consumers"
    assert env.api("POST", path, {"data": [{"type": "workspaces", "id": env.workspace_id}]}).status_code == 204
    env.create_run(env.upload_config())  # a run of `app`: outside the project, a named consumer
    token = {"Authorization": f"Bearer {env.claim()['run_token']}"}
    read = lambda: env.client.get(f"/api/v2/workspaces/{source['id']}/current-state-version", headers=token)  # noqa: E731
    assert read().status_code == 200

    both = {"data": {"type": "workspaces", "attributes": {"global-remote-state": True, "project-remote-state": True}}}
    refused = env.api("PATCH", f"/workspaces/{source['id']}", both)
    assert refused.status_code == 422 and "Project remote state cannot be enabled" in refused.text
    project_only = {"data": {"type": "workspaces", "attributes": {"project-remote-state": True}}}
    updated = env.api("PATCH", f"/workspaces/{source['id']}", project_only).json()["data"]
    assert updated["attributes"]["project-remote-state"] is True
    assert [ws["id"] for ws in env.api("GET", path).json()["data"]] == [sibling["id"]]  # the project's, not `app`
    assert read().status_code == 404  # `app` is outside the project: its named consumer entry no longer counts

    env.api("POST", f"/projects/{project}/relationships/workspaces", {"data": [{"type": "workspaces",
                                                                                "id": env.workspace_id}]})  # fmt: skip
    assert read().status_code == 200  # now a workspace of the project


def test_a_workspace_document_names_its_variables() -> None:
    env = make_run_env()
    body = {"data": {"type": "vars", "attributes": {"key": "region", "value": "eu", "category": "terraform"}}}
    created = env.api("POST", f"/workspaces/{env.workspace_id}/vars", body)
    assert created.status_code == 201, created.text
    read = env.api("GET", f"/workspaces/{env.workspace_id}").json()["data"]
    assert read["relationships"]["vars"]["data"] == [{"type": "vars", "id": created.json()["data"]["id"]}]
    by_name = env.api("GET", "/organizations/acme/workspaces/app").json()["data"]
    assert by_name["relationships"]["vars"] == read["relationships"]["vars"]
