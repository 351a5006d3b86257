"""Two-step uploads: the API finalizes without reading the state body; the events worker parses and indexes it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from state_helpers import LINEAGE, Env, md5, null_resource, state_bytes


def _upload(env: Env, raw: bytes, serial: int, **kw: Any) -> str:
    r = env.push(None, serial, md5_hex=md5(raw), **kw)
    assert r.status_code == 201, r.text
    env.land(f"state/{env.ws_id}/{r.json()['data']['id']}.tfstate", raw)
    return str(r.json()["data"]["id"])


@pytest.fixture
def body_reads(state_env: Env, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every key whose body is read from the blob store (get / iter_chunks / get_range)."""
    blobs, reads = state_env.container.blobs, []
    get, iter_chunks, get_range = blobs.get, blobs.iter_chunks, blobs.get_range

    def spy_get(key: str, version: str | None = None) -> bytes:
        reads.append(key)
        return get(key, version)

    def spy_iter(key: str, chunk_size: int = 1024 * 1024, version: str | None = None) -> Iterator[bytes]:
        reads.append(key)
        return iter_chunks(key, chunk_size, version)

    def spy_range(key: str, start: int, end: int) -> bytes:
        reads.append(key)
        return get_range(key, start, end)

    monkeypatch.setattr(blobs, "get", spy_get)
    monkeypatch.setattr(blobs, "iter_chunks", spy_iter)
    monkeypatch.setattr(blobs, "get_range", spy_range)
    return reads


def test_api_finalize_never_reads_the_state_body(state_env: Env, body_reads: list[str]) -> None:
    env = state_env
    env.lock()
    raw = state_bytes(1, outputs={"o": {"value": 1, "type": "number"}}, resources=[null_resource("a", "1")])
    sv_id = _upload(env, raw, 1)
    headers = env.auth
    got = env.client.get(f"/api/v2/state-versions/{sv_id}", headers=headers).json()["data"]["attributes"]
    assert got["status"] == "finalized" and got["size"] == len(raw) and got["resources-processed"] is False
    assert env.client.get(f"/api/v2/workspaces/{env.ws_id}/current-state-version", headers=headers).status_code == 200
    assert env.client.get(f"/api/v2/workspaces/{env.ws_id}/state-versions", headers=headers).status_code == 200
    assert env.client.post(f"/api/v2/workspaces/{env.ws_id}/actions/unlock", headers=headers).status_code == 200
    download = env.client.get(f"/api/v2/state-versions/{sv_id}/download", headers=headers, follow_redirects=False)
    assert download.status_code == 302
    assert body_reads == []
    assert env.ws().current_state_version_id == sv_id and env.ws().state_serial == 1
    env.drain_events()  # the events worker is the one that reads it
    assert body_reads == [f"state/{env.ws_id}/{sv_id}.tfstate"]


def test_state_uploaded_event_rebuilds_the_index_and_extracts_outputs(state_env: Env) -> None:
    env = state_env
    env.lock()
    first = env.push(state_bytes(1, resources=[null_resource("a", "id-a"), null_resource("b", "id-b")]), 1)
    first_id = first.json()["data"]["id"]
    raw = state_bytes(
        2,
        outputs={"url": {"value": "https://x", "type": "string"}},
        resources=[null_resource("a", "id-a"), null_resource("c", "id-c", count=2)],
    )
    sv_id = _upload(env, raw, 2, lineage=None)  # no lineage, no json-state-outputs: both come from the state

    def addresses() -> list[str]:
        rows = env.client.get(f"/api/v2/workspaces/{env.ws_id}/resources", headers=env.auth).json()["data"]
        return sorted(r["attributes"]["address"] for r in rows)

    assert env.client.get(f"/api/v2/state-versions/{sv_id}", headers=env.auth).status_code == 200
    assert env.ws().current_state_version_id == sv_id
    assert addresses() == []  # items of the previous version are never shown for the new current one
    assert env.container.state_versions.current_outputs(env.principal, env.ws_id) == []

    handled = env.drain_events()  # the inline first version's `state.indexed`, then the upload's two events
    events = [e for e in handled if e["type"] == "state.uploaded"]
    assert events == [{"type": "state.uploaded", "state_version_id": sv_id, "workspace_id": env.ws_id}]
    assert handled[-1] == {"type": "state.indexed", "state_version_id": sv_id, "workspace_id": env.ws_id}
    assert addresses() == ["null_resource.a", "null_resource.c[0]", "null_resource.c[1]"]
    rows = env.client.get(f"/api/v2/workspaces/{env.ws_id}/resources", headers=env.auth).json()["data"]
    modified = {r["attributes"]["address"]: r["attributes"]["modified-by-state-version-id"] for r in rows}
    assert modified["null_resource.a"] == first_id and modified["null_resource.c[0]"] == sv_id
    outputs = env.container.state_versions.current_outputs(env.principal, env.ws_id)
    assert [(o.name, o.value) for o in outputs] == [("url", "https://x")]
    ws = env.ws()
    assert ws.resource_count == 3 and ws.state_lineage == LINEAGE
    data = env.client.get(f"/api/v2/state-versions/{sv_id}", headers=env.auth).json()["data"]
    assert data["attributes"]["resources-processed"] is True and data["attributes"]["lineage"] == LINEAGE
    assert data["attributes"]["providers"] and [o["id"] for o in data["relationships"]["outputs"]["data"]] == [
        outputs[0].id
    ]

    env.container.events.handle(events[0])  # a redelivered event changes nothing
    assert len(env.container.state_versions.current_outputs(env.principal, env.ws_id)) == 1
    assert addresses() == ["null_resource.a", "null_resource.c[0]", "null_resource.c[1]"]


def test_events_for_unknown_or_superseded_versions_are_ignored(state_env: Env) -> None:
    env = state_env
    env.lock()
    env.container.events.handle({"type": "state.uploaded", "state_version_id": "sv-doesnotexist1234"})
    env.container.events.handle({"type": "state.uploaded"})
    sv_id = _upload(env, state_bytes(1, resources=[null_resource("a", "1")]), 1)
    env.client.get(f"/api/v2/state-versions/{sv_id}", headers=env.auth)
    env.push(state_bytes(2, resources=[null_resource("b", "2")]), 2)  # an inline write wins before the worker runs
    env.drain_events()
    rows = env.client.get(f"/api/v2/workspaces/{env.ws_id}/resources", headers=env.auth).json()["data"]
    assert [r["attributes"]["address"] for r in rows] == ["null_resource.b"]
    assert env.ws().resource_count == 1
