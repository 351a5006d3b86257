"""State versions over the TFC API: inline writes and their checks, reads, downloads, rollback."""

from __future__ import annotations

import base64
import dataclasses
from typing import Any

from state_helpers import LINEAGE, Env, make_env, md5, null_resource, other_user, state_bytes, sv_body
from terrace.config import Settings


def test_inline_create_becomes_current_and_downloads_via_redirect(state_env: Env) -> None:
    env = state_env
    env.lock()
    raw = state_bytes(1, outputs={"ip": {"value": "10.0.0.1", "type": "string"}}, resources=[null_resource("a", "1")])
    r = env.push(raw, 1)
    assert r.status_code == 201, r.text
    data = r.json()["data"]
    assert data["type"] == "state-versions" and data["id"].startswith("sv-")
    attrs = data["attributes"]
    assert attrs["serial"] == 1 and attrs["lineage"] == LINEAGE and attrs["md5"] == md5(raw)
    assert attrs["status"] == "finalized" and attrs["size"] == len(raw) and attrs["resources-processed"] is True
    assert attrs["hosted-state-upload-url"] is None and attrs["created-at"].endswith("Z")
    assert attrs["vcs-commit-sha"] is None and attrs["intermediate"] is False and attrs["state-version"] == 4
    assert data["relationships"]["workspace"]["data"]["id"] == env.ws_id
    assert len(data["relationships"]["outputs"]["data"]) == 1
    ws = env.ws()
    assert (ws.current_state_version_id, ws.state_serial, ws.state_lineage, ws.state_md5, ws.resource_count) == (
        data["id"],
        1,
        LINEAGE,
        md5(raw),
        1,
    )

    url = attrs["hosted-state-download-url"]
    assert url.endswith(f"/api/v2/state-versions/{data['id']}/download")
    path = url.split("://", 1)[1].split("/", 1)[1]
    dl = env.client.get("/" + path, headers=env.auth, follow_redirects=False)
    assert dl.status_code == 302
    location = dl.headers["location"]
    assert location.startswith("memory://blobs/") and "op=get" in location
    key = location.removeprefix("memory://blobs/").split("?", 1)[0]
    assert key == f"state/{env.ws_id}/{data['id']}.tfstate"
    assert env.container.blobs.get(key) == raw
    assert env.client.get("/" + path, follow_redirects=False).status_code == 401

    cur = env.client.get(f"/api/v2/workspaces/{env.ws_id}/current-state-version", headers=env.auth)
    assert cur.status_code == 200 and cur.json()["data"]["id"] == data["id"]
    one = env.client.get(f"/api/v2/state-versions/{data['id']}", headers=env.auth)
    assert one.status_code == 200 and one.json()["data"]["attributes"]["serial"] == 1


def test_no_state_is_404(state_env: Env) -> None:
    r = state_env.client.get(f"/api/v2/workspaces/{state_env.ws_id}/current-state-version", headers=state_env.auth)
    assert r.status_code == 404


def _first(env: Env, serial: int = 5) -> bytes:
    env.lock()
    raw = state_bytes(serial, resources=[null_resource("a", "1")])
    assert env.push(raw, serial).status_code == 201
    return raw


def test_same_serial_same_content_is_a_new_version_as_in_tfc(state_env: Env) -> None:
    raw = _first(state_env)
    first = state_env.ws().current_state_version_id
    r = state_env.push(raw, 5)
    assert r.status_code == 201
    second = r.json()["data"]["id"]
    assert second != first and second == state_env.ws().current_state_version_id
    listed = state_env.client.get(f"/api/v2/workspaces/{state_env.ws_id}/state-versions", headers=state_env.auth)
    ids = [v["id"] for v in listed.json()["data"]]
    assert first in ids and second in ids
    assert state_env.ws().state_serial == 5


def test_rejections_change_nothing(state_env: Env) -> None:
    env = state_env
    raw = _first(env)
    before = env.stored()
    lower = state_bytes(4, resources=[null_resource("b", "2")])
    equal_diff = state_bytes(5, resources=[null_resource("b", "2")])
    foreign = state_bytes(6, lineage="other-lineage")
    good6 = state_bytes(6)
    cases = [
        (env.push(lower, 4), 409, "serial"),
        (env.push(equal_diff, 5), 409, "serial"),
        (env.push(foreign, 6, lineage="other-lineage"), 409, "lineage"),
        (env.push(good6, 6, md5_hex="0" * 32), 422, "md5"),
        (
            env.client.post(
                f"/api/v2/workspaces/{env.ws_id}/state-versions",
                headers=env.auth,
                json={
                    "data": {
                        "type": "state-versions",
                        "attributes": {"serial": 6, "md5": md5(good6), "state": "%%%not-base64%%%"},
                    }
                },
            ),
            422,
            "base64",
        ),
        (env.push(b"{not json", 6), 422, "JSON"),
        (env.push(b'{"serial": 6}', 6), 422, "lineage"),
        (
            env.client.post(
                f"/api/v2/workspaces/{env.ws_id}/state-versions",
                headers=env.auth,
                json={"data": {"type": "workspaces", "attributes": {}}},
            ),
            422,
            "type",
        ),
        (
            env.client.post(f"/api/v2/workspaces/{env.ws_id}/state-versions", headers=env.auth, content=b"nope"),
            422,
            "JSON",
        ),
        (
            env.client.post(
                f"/api/v2/workspaces/{env.ws_id}/state-versions",
                headers=env.auth,
                json={"data": {"type": "state-versions", "attributes": {"md5": md5(good6)}}},
            ),
            422,
            "serial",
        ),
        (env.push(good6, 6, ws_id="ws-doesnotexist1234"), 404, "not found"),
    ]
    for response, status, text in cases:
        assert response.status_code == status, (text, response.text)
        assert text.lower() in response.text.lower(), (text, response.text)
        assert env.stored() == before, text
    assert (
        env.ws().state_serial == 5
        and env.container.blobs.get(f"state/{env.ws_id}/{env.ws().current_state_version_id}.tfstate") == raw
    )


def test_force_overrides_serial_and_lineage(state_env: Env) -> None:
    _first(state_env)
    foreign = state_bytes(1, lineage="new-lineage")
    r = state_env.push(foreign, 1, lineage="new-lineage", force=True)
    assert r.status_code == 201, r.text
    assert state_env.ws().state_lineage == "new-lineage" and state_env.ws().state_serial == 1


def test_writer_must_hold_the_lock(state_env: Env) -> None:
    env = state_env
    before = env.stored()
    r = env.push(state_bytes(1), 1)
    assert r.status_code == 409 and "must be locked by you" in r.text
    assert env.stored() == before
    token, principal = other_user(env)
    env.container.organizations.add_owner(env.org, principal.subject_id)
    env.lock(token=token)
    before = env.stored()
    r = env.push(state_bytes(1), 1)
    assert r.status_code == 409 and "must be locked by you" in r.text
    assert env.stored() == before


def test_oversize_inline_state_is_413() -> None:
    settings = Settings(table_name="m", blob_bucket="m", url_signing_secret="s", max_inline_state_bytes=200)
    env = make_env(settings)
    env.lock()
    before = env.stored()
    big = state_bytes(1, outputs={"x": {"value": "y" * 500, "type": "string"}})
    r = env.push(big, 1)
    assert r.status_code == 413 and "hosted-state-upload-url" in r.text
    assert env.stored() == before


def test_other_org_and_unknown_ids_are_404(state_env: Env) -> None:
    env = state_env
    _first(env)
    sv_id = env.ws().current_state_version_id
    token, _ = other_user(env)
    stranger = {"Authorization": f"Bearer {token}"}
    before = env.stored()
    for path in (
        f"/api/v2/state-versions/{sv_id}",
        f"/api/v2/state-versions/{sv_id}/download",
        f"/api/v2/workspaces/{env.ws_id}/current-state-version",
        f"/api/v2/state-versions/{sv_id}/outputs",
        f"/api/v2/state-versions?filter[workspace][name]=prod&filter[organization][name]={env.org}",
        "/api/v2/state-versions/sv-unknown000000000",
        "/api/v2/state-versions/bogus",
        "/api/v2/state-version-outputs/wos-unknown00000000",
    ):
        assert env.client.get(path, headers=stranger, follow_redirects=False).status_code == 404, path
    r = env.client.post(
        f"/api/v2/workspaces/{env.ws_id}/state-versions", headers=stranger, json=sv_body(state_bytes(9), 9)
    )
    assert r.status_code == 404
    assert env.client.get("/api/v2/state-versions/sv-unknown000000000", headers=env.auth).status_code == 404
    assert env.stored() == before


def test_lists_newest_first_with_filters_and_pagination(state_env: Env) -> None:
    env = state_env
    env.lock()
    ids = [env.push(state_bytes(s), s).json()["data"]["id"] for s in (1, 2, 3)]
    r = env.client.get(
        f"/api/v2/state-versions?filter[workspace][name]=prod&filter[organization][name]={env.org}&page[size]=2",
        headers=env.auth,
    )
    assert r.status_code == 200
    assert [d["id"] for d in r.json()["data"]] == ids[::-1][:2]
    assert r.json()["meta"]["pagination"]["total-count"] == 3
    r = env.client.get(f"/api/v2/workspaces/{env.ws_id}/state-versions?filter[status]=pending", headers=env.auth)
    assert r.json()["data"] == []
    assert env.client.get("/api/v2/state-versions", headers=env.auth).status_code == 422


def test_rollback_copies_an_old_version_with_the_next_serial(state_env: Env) -> None:
    env = state_env
    env.lock()
    first = env.push(state_bytes(1, resources=[null_resource("old", "1")]), 1).json()["data"]["id"]
    env.push(state_bytes(2, resources=[null_resource("new", "2")]), 2)
    body: dict[str, Any] = {
        "data": {
            "type": "state-versions",
            "relationships": {"rollback-state-version": {"data": {"type": "state-versions", "id": first}}},
        }
    }
    r = env.client.patch(f"/api/v2/workspaces/{env.ws_id}/state-versions", headers=env.auth, json=body)
    assert r.status_code == 201, r.text
    new = r.json()["data"]
    assert new["id"] != first and new["attributes"]["serial"] == 3 and new["attributes"]["lineage"] == LINEAGE
    assert env.ws().current_state_version_id == new["id"]
    res = env.client.get(f"/api/v2/workspaces/{env.ws_id}/resources", headers=env.auth).json()["data"]
    assert [x["attributes"]["address"] for x in res] == ["null_resource.old"]
    # a rolled-back state stays writable with the next serial
    assert env.push(state_bytes(4), 4).status_code == 201
    before = env.stored()
    bad = {"data": {"type": "state-versions", "relationships": {}}}
    assert (
        env.client.patch(f"/api/v2/workspaces/{env.ws_id}/state-versions", headers=env.auth, json=bad).status_code
        == 422
    )
    body["data"]["relationships"]["rollback-state-version"]["data"]["id"] = "sv-unknown000000000"
    assert (
        env.client.patch(f"/api/v2/workspaces/{env.ws_id}/state-versions", headers=env.auth, json=body).status_code
        == 404
    )
    assert env.stored() == before


def test_rollback_requires_the_lock(state_env: Env) -> None:
    env = state_env
    env.lock()
    first = env.push(state_bytes(1), 1).json()["data"]["id"]
    env.client.post(f"/api/v2/workspaces/{env.ws_id}/actions/unlock", headers=env.auth)
    before = env.stored()
    body = {
        "data": {
            "type": "state-versions",
            "relationships": {"rollback-state-version": {"data": {"type": "state-versions", "id": first}}},
        }
    }
    r = env.client.patch(f"/api/v2/workspaces/{env.ws_id}/state-versions", headers=env.auth, json=body)
    assert r.status_code == 409 and env.stored() == before


def test_lost_race_is_redecided(state_env: Env) -> None:
    """A concurrent writer bumps the workspace between read and transaction: the write is re-decided."""
    env = state_env
    env.lock()
    service = env.container.state_versions
    original = env.container.workspaces.load
    calls = {"n": 0}

    def racing_load(ws_id: str):
        ws = original(ws_id)
        calls["n"] += 1
        if calls["n"] == 1:  # someone else changes the workspace right after our first read
            env.container.workspaces.mutate(ws_id, lambda w: dataclasses.replace(w, description="touched"))
        return ws

    env.container.workspaces.load = racing_load
    try:
        raw = state_bytes(1)
        sv = service.create(env.principal, env.ws_id, sv_body(raw, 1)["data"]["attributes"])
    finally:
        env.container.workspaces.load = original
    assert calls["n"] >= 2
    ws = env.ws()
    assert ws.current_state_version_id == sv.id and ws.description == "touched"


def test_inline_state_attribute_is_base64(state_env: Env) -> None:
    env = state_env
    env.lock()
    raw = state_bytes(1)
    assert base64.b64decode(sv_body(raw, 1)["data"]["attributes"]["state"]) == raw
    assert env.push(raw, 1).status_code == 201


def test_the_serial_attribute_names_the_version_even_when_the_file_says_otherwise(state_env: Env) -> None:
    """As TFC (go-tfe's own tests push one fixture file under several serials): the attributes win, md5 is
    still checked, serials still never go backwards and a foreign lineage is still refused."""
    env = state_env
    _first(env)  # serial 5
    fixture = state_bytes(1, resources=[null_resource("b", "2")])
    pushed = env.push(fixture, 7)
    assert pushed.status_code == 201, pushed.text
    assert pushed.json()["data"]["attributes"]["serial"] == 7 and env.ws().state_serial == 7
    assert env.push(fixture, 6).status_code == 409  # lower than the current 7, whatever the file says
    assert env.push(state_bytes(8), 8, lineage="other-lineage").status_code == 409  # the attribute's lineage


def test_include_outputs_and_the_version_s_outputs_show_sensitive_values_to_state_readers(state_env: Env) -> None:
    env = state_env
    outputs = {
        "ip": {"value": "10.0.0.1", "type": "string"},
        "pw": {"value": "s3cret", "type": "string", "sensitive": True},
    }
    env.lock()
    sv_id = env.push(state_bytes(1, outputs=outputs), 1).json()["data"]["id"]
    for path in (f"/api/v2/state-versions/{sv_id}", f"/api/v2/workspaces/{env.ws_id}/current-state-version"):
        doc = env.client.get(f"{path}?include=outputs", headers=env.auth).json()
        assert {o["attributes"]["name"]: o["attributes"]["value"] for o in doc["included"]} == {
            "ip": "10.0.0.1",
            "pw": "s3cret",
        }
        assert {o["id"] for o in doc["included"]} == {r["id"] for r in doc["data"]["relationships"]["outputs"]["data"]}
        assert "included" not in env.client.get(path, headers=env.auth).json()
    listed = env.client.get(f"/api/v2/workspaces/{env.ws_id}/state-versions?include=outputs", headers=env.auth).json()
    assert len(listed["included"]) == 2 and listed["meta"]["pagination"]["total-count"] == 1
    by_version = env.client.get(f"/api/v2/state-versions/{sv_id}/outputs", headers=env.auth).json()["data"]
    assert {o["attributes"]["name"]: o["attributes"]["value"] for o in by_version}["pw"] == "s3cret"
    current = env.client.get(f"/api/v2/workspaces/{env.ws_id}/current-state-version-outputs", headers=env.auth)
    assert {o["attributes"]["name"]: o["attributes"]["value"] for o in current.json()["data"]}["pw"] is None


def test_backing_data_soft_delete_restore_and_permanent_delete(state_env: Env) -> None:
    env = state_env
    env.lock()
    old = env.push(state_bytes(1), 1).json()["data"]["id"]
    current = env.push(state_bytes(2), 2).json()["data"]["id"]
    act = lambda sv, action: env.client.post(  # noqa: E731
        f"/api/v2/state-versions/{sv}/actions/{action}_backing_data", headers=env.auth
    )
    download = lambda sv: env.client.get(  # noqa: E731
        f"/api/v2/state-versions/{sv}/download", headers=env.auth, follow_redirects=False
    )
    assert download(old).status_code == 302
    assert act(current, "soft_delete").status_code == 409  # the current version keeps its data
    assert act(old, "restore").status_code == 409
    assert act(old, "soft_delete").status_code == 204
    assert download(old).status_code == 404
    shown = env.client.get(f"/api/v2/state-versions/{old}", headers=env.auth).json()["data"]["attributes"]
    assert shown["status"] == "backing_data_soft_deleted" and shown["hosted-state-download-url"] is None
    rollback = {"data": {"type": "state-versions", "relationships": {"rollback-state-version": {"data": {"id": old}}}}}
    assert (
        env.client.patch(f"/api/v2/workspaces/{env.ws_id}/state-versions", headers=env.auth, json=rollback).status_code
        == 404
    )
    assert act(old, "restore").status_code == 204 and download(old).status_code == 302
    assert act(old, "soft_delete").status_code == 204 and act(old, "permanently_delete").status_code == 204
    refused = act(old, "restore")
    assert refused.status_code == 409 and "transition not allowed" in refused.json()["errors"][0]["detail"]
    assert download(old).status_code == 404 and download(current).status_code == 302
    assert not any(key.endswith(f"{old}.tfstate") for key in env.container.blobs.objects)  # type: ignore[attr-defined]
    assert act(old, "frobnicate").status_code == 404
    other_token, _ = other_user(env)
    assert (
        env.client.post(
            f"/api/v2/state-versions/{current}/actions/soft_delete_backing_data",
            headers={"Authorization": f"Bearer {other_token}"},
        ).status_code
        == 404
    )
