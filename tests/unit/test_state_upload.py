"""Two-step state uploads: pending versions, presigned PUT URLs, finalization when the upload lands (or on
unlock), unlock refusal."""

from __future__ import annotations

import base64
import json

from state_helpers import LINEAGE, Env, md5, null_resource, state_bytes, sv_body
from terrace.services.events import landed_event


def _put(env: Env, url: str, data: bytes, landed: bool = True) -> None:
    """What a client's PUT to a presigned URL does, for the memory blob store, and the `blob.landed` event the
    events worker then handles (S3's notification; the embedded blob server hands it over in the PUT)."""
    assert url.startswith("memory://blobs/") and "op=put" in url
    key = url.removeprefix("memory://blobs/").split("?", 1)[0]
    env.container.blobs.put(key, data)
    if landed:
        env.container.events.handle(landed_event(key))


def _pending(env: Env, raw: bytes, serial: int, **kw: object) -> dict:
    r = env.push(None, serial, md5_hex=md5(raw), **kw)
    assert r.status_code == 201, r.text
    return r.json()["data"]


def test_two_step_upload_finalizes_when_it_lands(state_env: Env) -> None:
    env = state_env
    env.lock()
    raw = state_bytes(
        1,
        outputs={"secret": {"value": "s3cr3t", "type": "string", "sensitive": True}},
        resources=[null_resource("a", "id-1")],
    )
    json_outputs = base64.b64encode(
        json.dumps({"secret": {"value": "s3cr3t", "type": "string", "sensitive": True}}).encode()
    ).decode()
    data = _pending(env, raw, 1, **{"json-state-outputs": json_outputs})
    attrs = data["attributes"]
    assert attrs["status"] == "pending" and attrs["hosted-state-download-url"] is None
    assert attrs["hosted-state-upload-url"].endswith("?op=put&ttl=900")
    assert (
        attrs["hosted-json-state-upload-url"].startswith("memory://")
        and ".json" in attrs["hosted-json-state-upload-url"]
    )
    assert env.ws().current_state_version_id is None  # not current until uploaded

    unlock = env.client.post(f"/api/v2/workspaces/{env.ws_id}/actions/unlock", headers=env.auth)
    assert unlock.status_code == 409 and "latest state version is still pending" in unlock.text
    assert env.ws().locked

    _put(env, attrs["hosted-state-upload-url"], raw)
    _put(env, attrs["hosted-json-state-upload-url"], b'{"format_version":"1.0"}')
    r = env.client.get(f"/api/v2/state-versions/{data['id']}", headers=env.auth)
    final = r.json()["data"]["attributes"]
    assert final["status"] == "finalized" and final["hosted-state-upload-url"] is None
    assert final["hosted-json-state-download-url"].endswith(f"/state-versions/{data['id']}/json-download")
    ws = env.ws()
    assert ws.current_state_version_id == data["id"] and ws.state_serial == 1 and ws.resource_count == 0
    assert final["resources-processed"] is False  # parsing and indexing happen in the events worker
    assert env.drain_events() == [
        {"type": "state.uploaded", "state_version_id": data["id"], "workspace_id": env.ws_id},
        {"type": "state.indexed", "state_version_id": data["id"], "workspace_id": env.ws_id},  # once indexed
    ]
    assert env.ws().resource_count == 1
    indexed = env.client.get(f"/api/v2/state-versions/{data['id']}", headers=env.auth).json()["data"]["attributes"]
    assert indexed["resources-processed"] is True and indexed["terraform-version"] == "1.0.3"
    rows = env.client.get(f"/api/v2/workspaces/{env.ws_id}/resources", headers=env.auth).json()["data"]
    assert [r["attributes"]["address"] for r in rows] == ["null_resource.a"]
    dl = env.client.get(f"/api/v2/state-versions/{data['id']}/json-download", headers=env.auth, follow_redirects=False)
    assert dl.status_code == 302 and dl.headers["location"].endswith(".json?op=get&ttl=900")
    outs = env.client.get(f"/api/v2/workspaces/{env.ws_id}/current-state-version-outputs", headers=env.auth).json()
    assert [(o["attributes"]["name"], o["attributes"]["value"]) for o in outs["data"]] == [("secret", None)]
    assert env.client.post(f"/api/v2/workspaces/{env.ws_id}/actions/unlock", headers=env.auth).status_code == 200


def test_unlock_finalizes_an_uploaded_pending_version(state_env: Env) -> None:
    env = state_env
    env.lock()
    raw = state_bytes(1)
    data = _pending(env, raw, 1)
    _put(env, data["attributes"]["hosted-state-upload-url"], raw, landed=False)  # its event not handled yet
    assert env.client.post(f"/api/v2/workspaces/{env.ws_id}/actions/unlock", headers=env.auth).status_code == 200
    assert env.ws().current_state_version_id == data["id"]


def test_md5_mismatch_discards_and_keeps_current(state_env: Env) -> None:
    env = state_env
    env.lock()
    first = env.push(state_bytes(1), 1).json()["data"]["id"]
    raw = state_bytes(2)
    data = _pending(env, raw, 2)
    _put(env, data["attributes"]["hosted-state-upload-url"], state_bytes(2, resources=[null_resource("x", "y")]))
    r = env.client.get(f"/api/v2/workspaces/{env.ws_id}/current-state-version", headers=env.auth)
    assert r.json()["data"]["id"] == first
    sv = env.client.get(f"/api/v2/state-versions/{data['id']}", headers=env.auth).json()["data"]["attributes"]
    assert sv["status"] == "discarded" and "md5" in sv["error"]
    assert env.ws().state_serial == 1 and "pending_state_version_id" not in env.ws().extra
    assert env.client.post(f"/api/v2/workspaces/{env.ws_id}/actions/unlock", headers=env.auth).status_code == 200


def test_pending_create_refuses_lower_serial_and_foreign_lineage(state_env: Env) -> None:
    env = state_env
    env.lock()
    env.push(state_bytes(5), 5)
    before = env.stored()
    assert env.push(None, 4, md5_hex="a" * 32).status_code == 409
    assert env.push(None, 6, md5_hex="a" * 32, lineage="foreign").status_code == 409
    assert env.push(None, 6, md5_hex="xyz").status_code == 422
    assert env.push(None, 6, md5_hex="a" * 32, **{"json-state-outputs": "!!"}).status_code == 422
    assert env.stored() == before


def test_uploaded_state_disagreeing_with_its_declaration_is_marked_by_the_events_worker(state_env: Env) -> None:
    env = state_env
    env.lock()
    raw = state_bytes(3, resources=[null_resource("a", "1")])
    data = _pending(env, raw, 2)  # declared serial 2, uploaded file says 3
    _put(env, data["attributes"]["hosted-state-upload-url"], raw)
    sv = env.client.get(f"/api/v2/state-versions/{data['id']}", headers=env.auth).json()["data"]["attributes"]
    assert sv["status"] == "finalized" and sv["serial"] == 2  # the API trusts the declaration (no body read)
    env.drain_events()
    item = env.container.table.get(data["id"], "sv")
    assert item is not None and "serial 3" in item["index_error"] and item["resources_processed"] is False
    shown = env.client.get(f"/api/v2/state-versions/{data['id']}", headers=env.auth).json()["data"]["attributes"]
    assert "serial 3" in shown["index-error"]
    ws = env.ws()
    assert ws.current_state_version_id == data["id"] and ws.state_serial == 2 and ws.resource_count == 0
    assert env.client.get(f"/api/v2/workspaces/{env.ws_id}/resources", headers=env.auth).json()["data"] == []
    env.container.events.handle({"type": "state.uploaded", "state_version_id": data["id"]})  # redelivery: no-op
    assert env.container.table.get(data["id"], "sv") == item


def test_newer_pending_supersedes_older_and_events_path_finalizes(state_env: Env) -> None:
    env = state_env
    env.lock()
    old = _pending(env, state_bytes(1), 1)
    raw = state_bytes(2)
    new = _pending(env, raw, 2)
    assert (
        env.client.get(f"/api/v2/state-versions/{old['id']}", headers=env.auth).json()["data"]["attributes"]["status"]
        == "discarded"
    )
    key = f"state/{env.ws_id}/{new['id']}.tfstate"
    env.container.blobs.put(key, raw)
    sv = env.container.state_versions.finalize_uploaded(key)
    assert sv is not None and sv.status == "finalized" and sv.lineage == LINEAGE and not sv.resources_processed
    assert env.ws().current_state_version_id == new["id"]
    assert env.container.state_versions.finalize_uploaded("state/x/unknown.tfstate") is None


def test_inline_write_discards_an_outstanding_pending_version(state_env: Env) -> None:
    env = state_env
    env.lock()
    pending = _pending(env, state_bytes(1), 1)
    assert (
        env.client.post(
            f"/api/v2/workspaces/{env.ws_id}/state-versions", headers=env.auth, json=sv_body(state_bytes(1), 1)
        ).status_code
        == 201
    )
    assert (
        env.client.get(f"/api/v2/state-versions/{pending['id']}", headers=env.auth).json()["data"]["attributes"][
            "status"
        ]
        == "discarded"
    )
    assert env.client.post(f"/api/v2/workspaces/{env.ws_id}/actions/unlock", headers=env.auth).status_code == 200
