"""Workspace variables (sensitive values encrypted, never returned) and configuration versions."""

from __future__ import annotations

from typing import Any

from run_helpers import make_run_env, tarball
from table_items import memory_items


def _var(key: str, value: str, **extra: object) -> dict:  # type: ignore[type-arg]
    return {"data": {"type": "vars", "attributes": {"key": key, "value": value, "category": "terraform", **extra}}}


def test_sensitive_variable_is_encrypted_hidden_and_given_to_its_run() -> None:
    env = make_run_env()
    ws = env.workspace_id
    created = env.api("POST", f"/workspaces/{ws}/vars", _var("password", "hunter2", sensitive=True))
    assert created.status_code == 201 and created.json()["data"]["attributes"]["value"] is None
    env.api("POST", f"/workspaces/{ws}/vars", _var("region", "eu-west-1"))
    env.api(
        "POST",
        f"/workspaces/{ws}/vars",
        {"data": {"type": "vars", "attributes": {"key": "TF_LOG", "value": "INFO", "category": "env"}}},
    )
    listed = env.api("GET", f"/workspaces/{ws}/vars").json()["data"]
    assert {v["attributes"]["key"]: v["attributes"]["value"] for v in listed} == {
        "password": None,
        "region": "eu-west-1",
        "TF_LOG": "INFO",
    }
    assert "hunter2" not in repr(memory_items(env.container.table))
    env.create_run(env.upload_config())
    spec = env.work_next()
    given = {v["key"]: v["value"] for v in spec["variables"]}
    assert given == {"password": "hunter2", "region": "eu-west-1", "TF_LOG": "INFO"}


def test_variable_rejections_lose_nothing() -> None:
    env = make_run_env()
    ws = env.workspace_id
    secret = env.api("POST", f"/workspaces/{ws}/vars", _var("token", "s3cr3t", sensitive=True)).json()["data"]
    assert env.api("POST", f"/workspaces/{ws}/vars", _var("token", "again")).status_code == 409
    assert env.api("POST", f"/workspaces/{ws}/vars", _var("bad\nkey", "x")).status_code == 422
    assert env.api("POST", f"/workspaces/{ws}/vars", _var("k", "x", category="nope")).status_code == 422
    assert env.api("POST", f"/workspaces/{ws}/vars", {"data": {"type": "runs"}}).status_code == 422
    unhide = {"data": {"type": "vars", "attributes": {"sensitive": False}}}
    assert env.api("PATCH", f"/workspaces/{ws}/vars/{secret['id']}", unhide).status_code == 422
    assert env.api("GET", f"/workspaces/{ws}/vars/var-doesnotexist1234").status_code == 404
    assert [v["attributes"]["key"] for v in env.api("GET", f"/workspaces/{ws}/vars").json()["data"]] == ["token"]
    assert env.container.variables.for_run(ws)[0].value == "s3cr3t"


def test_configuration_version_moves_to_uploaded_once_the_object_lands() -> None:
    env = make_run_env()
    body = {"data": {"type": "configuration-versions", "attributes": {"auto-queue-runs": False}}}
    cv = env.api("POST", f"/workspaces/{env.workspace_id}/configuration-versions", body).json()["data"]
    assert cv["attributes"]["status"] == "pending" and cv["attributes"]["upload-url"]
    pending = env.api("GET", f"/configuration-versions/{cv['id']}").json()["data"]["attributes"]
    assert pending["status"] == "pending" and pending["upload-url"] is None  # only the creation answer has it
    key = cv["attributes"]["upload-url"].split("memory://blobs/")[1].split("?")[0]
    env.land(key, tarball({"main.tf": ""}))  # the PUT and its `blob.landed` event
    read = env.api("GET", f"/configuration-versions/{cv['id']}").json()["data"]["attributes"]
    assert read["status"] == "uploaded" and read["upload-url"] is None


def test_archive_and_backing_data_follow_hcp_transitions() -> None:
    env = make_run_env()
    old, current = env.upload_config(), env.upload_config()
    pending = env.api(
        "POST", f"/workspaces/{env.workspace_id}/configuration-versions", {"data": {"type": "configuration-versions"}}
    ).json()["data"]["id"]
    provisional = {"data": {"type": "configuration-versions", "attributes": {"provisional": True}}}
    assert env.api("POST", f"/workspaces/{env.workspace_id}/configuration-versions", provisional).status_code == 201
    ws = env.api("GET", f"/workspaces/{env.workspace_id}").json()["data"]
    assert ws["relationships"]["current-configuration-version"]["data"]["id"] == pending  # not the provisional one

    def act(cv_id: str, action: str) -> Any:
        return env.api("POST", f"/configuration-versions/{cv_id}/actions/{action}", {})

    refused = act(current, "archive")
    assert refused.status_code == 409
    assert refused.json()["errors"][0]["title"] == "transition not allowed"
    assert "because it is current" in refused.json()["errors"][0]["detail"]
    assert act(pending, "archive").status_code == 409
    run = env.create_run(old)  # a run that has not ended still needs its configuration
    assert "a run still uses it" in act(old, "archive").json()["errors"][0]["detail"]
    assert act(old, "soft_delete_backing_data").status_code == 409
    assert env.api("POST", f"/runs/{run['id']}/actions/cancel", {}).status_code == 202

    assert act(old, "soft_delete_backing_data").status_code == 204
    assert env.api("GET", f"/configuration-versions/{old}/download").status_code == 404
    assert act(old, "restore_backing_data").status_code == 204
    assert env.api("GET", f"/configuration-versions/{old}/download", follow_redirects=False).status_code == 302
    assert act(old, "permanently_delete_backing_data").status_code == 409  # not soft-deleted
    assert act(old, "soft_delete_backing_data").status_code == 204
    assert act(old, "permanently_delete_backing_data").status_code == 204
    assert act(old, "restore_backing_data").json()["errors"][0]["title"] == "transition not allowed"
    assert env.api("GET", f"/configuration-versions/{old}/download").status_code == 404
    assert act(old, "unknown_action").status_code == 404

    assert act(current, "soft_delete_backing_data").status_code == 204  # not used by a run
    assert act(current, "restore_backing_data").status_code == 204
    newest = env.upload_config()
    assert act(current, "archive").status_code == 202
    archived = env.api("GET", f"/configuration-versions/{current}").json()["data"]["attributes"]
    assert archived["status"] == "archived" and "archived-at" in archived["status-timestamps"]
    assert act(current, "archive").status_code == 202  # already archived
    assert act("cv-nothing", "archive").status_code == 404
    assert act(newest, "archive").status_code == 409


def test_oversize_configuration_errors_with_a_clear_message() -> None:
    env = make_run_env(max_config_bytes=10)
    cv = env.api(
        "POST", f"/workspaces/{env.workspace_id}/configuration-versions", {"data": {"type": "configuration-versions"}}
    ).json()["data"]
    key = cv["attributes"]["upload-url"].split("memory://blobs/")[1].split("?")[0]
    env.land(key, b"x" * 11)
    read = env.api("GET", f"/configuration-versions/{cv['id']}").json()["data"]["attributes"]
    assert read["status"] == "errored" and "limit is 10 bytes" in read["error-message"]
    body = {
        "data": {
            "type": "runs",
            "relationships": {
                "workspace": {"data": {"type": "workspaces", "id": env.workspace_id}},
                "configuration-version": {"data": {"type": "configuration-versions", "id": cv["id"]}},
            },
        }
    }
    assert env.api("POST", "/runs", body).status_code == 422


def test_auto_queue_runs_creates_a_run_on_upload() -> None:
    env = make_run_env()
    cv = env.api(
        "POST",
        f"/workspaces/{env.workspace_id}/configuration-versions",
        {"data": {"type": "configuration-versions", "attributes": {"auto-queue-runs": True}}},
    ).json()["data"]
    key = cv["attributes"]["upload-url"].split("memory://blobs/")[1].split("?")[0]
    env.land(key, tarball({"main.tf": ""}))  # the landing queues the run
    runs = env.api("GET", f"/workspaces/{env.workspace_id}/runs").json()["data"]
    assert len(runs) == 1 and runs[0]["attributes"]["status"] == "plan_queued"


def test_version_id_reveals_nothing_about_the_value(monkeypatch) -> None:
    from terrace.domain import clock

    monkeypatch.setattr(clock, "now_iso", lambda: "2026-01-01T00:00:00.000Z")  # one instant for every write
    env = make_run_env()
    ws = env.workspace_id

    def version_id(response) -> str:  # type: ignore[no-untyped-def]
        assert response.status_code in (200, 201), response.text
        return str(response.json()["data"]["attributes"]["version-id"])

    first = env.api("POST", f"/workspaces/{ws}/vars", _var("a", "same-value", sensitive=True)).json()["data"]
    other = version_id(env.api("POST", f"/workspaces/{ws}/vars", _var("b", "same-value", sensitive=True)))
    ids = [first["attributes"]["version-id"], other]
    path = f"/workspaces/{ws}/vars/{first['id']}"
    for attrs in ({"value": "changed"}, {"value": "same-value"}, {"description": "only the description"}):
        ids.append(version_id(env.api("PATCH", path, {"data": {"type": "vars", "attributes": attrs}})))
    assert len(set(ids)) == len(ids)  # same value, same instant, back to an old value: never the same id
    assert all(len(v) >= 32 and "same" not in v for v in ids)


def test_the_legacy_vars_api_names_the_workspace() -> None:
    """HCP Terraform's older variables API: `POST /vars` with the workspace as a relationship, `GET /vars` filtered
    by organization and workspace name, `PATCH`/`DELETE /vars/:id`; what it does is the workspace's variables'."""
    from policy_helpers import call, member

    env = make_run_env()
    body = {"data": {"type": "vars", "attributes": {"key": "region", "value": "eu", "category": "terraform"},
            "relationships": {"workspace": {"data": {"type": "workspaces", "id": env.workspace_id}}}}}  # fmt: skip
    created = env.api("POST", "/vars", body)
    assert created.status_code == 201, created.text
    var_id = created.json()["data"]["id"]
    assert [v["id"] for v in env.api("GET", f"/workspaces/{env.workspace_id}/vars").json()["data"]] == [var_id]
    listed = env.api("GET", "/vars?filter[organization][name]=acme&filter[workspace][name]=app").json()["data"]
    assert [(v["id"], v["attributes"]["value"]) for v in listed] == [(var_id, "eu")]
    patch = {"data": {"type": "vars", "attributes": {"value": "us"}}}
    assert env.api("PATCH", f"/vars/{var_id}", patch).json()["data"]["attributes"]["value"] == "us"
    assert env.api("POST", "/vars", body).status_code == 409  # the same key twice, as on the workspace
    assert env.api("GET", "/vars?filter[organization][name]=acme").status_code == 422
    missing = {"data": {"type": "vars", "attributes": {"key": "x", "value": "1", "category": "env"}}}
    assert env.api("POST", "/vars", missing).status_code == 422
    reader = member(env, "reader")
    assert call(env, reader, "DELETE", f"/vars/{var_id}").status_code == 404  # the workspace is hidden from them
    assert env.api("DELETE", f"/vars/{var_id}").status_code == 204
    assert env.api("DELETE", f"/vars/{var_id}").status_code == 404
    assert env.api("PATCH", "/vars/nonexisting", patch).status_code == 404
