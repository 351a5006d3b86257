"""Hostile request bodies: streamed past the size limit, nested too deep, state serials and LockInfo past
what can be stored. Each is a clear 4xx and leaves nothing half-written."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import pytest
from state_helpers import LINEAGE, Env, make_env, md5, null_resource, state_bytes, sv_body
from table_items import memory_items
from terrace.config import Settings
from terrace.domain import limits
from terrace.web.app import create_app
from test_http_backend import basic

DEEP = b"[" * 100_000
LOCK = {"ID": "0b5a3e5c-1111-4000-8000-000000000001", "Operation": "OperationTypeApply", "Who": "me@host"}


def table_snapshot(env: Env) -> list[str]:
    return sorted(repr(item) for item in memory_items(env.container.table).values())


# streamed bodies ----------------------------------------------------------------------------
def stream(
    app: Any, method: str, path: str, headers: dict[str, str], chunks: int, chunk: bytes
) -> tuple[int, int, Any]:
    """Send a chunked body of `chunks` x `chunk` straight to the ASGI app; returns (status, chunks read, body)."""
    read = 0
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal read
        if read >= chunks:
            await asyncio.sleep(3600)  # the client would wait: the app must not read past the end
        read += 1
        return {"type": "http.request", "body": chunk, "more_body": read < chunks}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "https",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "client": ("127.0.0.1", 1),
        "server": ("testserver", 443),
    }
    asyncio.run(asyncio.wait_for(app(scope, receive, send), timeout=60))
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, read, json.loads(body)


@pytest.fixture
def small_limit_env() -> Env:
    return make_env(
        Settings(table_name="memory", blob_bucket="memory", url_signing_secret="s", max_request_bytes=64 * 1024)
    )


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/api/v2/organizations/acme/workspaces"), ("LOCK", "/state/v1/acme/new"), ("POST", "/state/v1/acme/new")],
)
def test_a_chunked_body_is_refused_as_soon_as_it_passes_the_limit(small_limit_env: Env, method: str, path: str) -> None:
    env = small_limit_env
    before = table_snapshot(env)
    app = create_app(env.container)
    headers = {"Authorization": f"Bearer {env.token}", "Transfer-Encoding": "chunked"}
    status, read, body = stream(app, method, path, headers, chunks=10_000, chunk=b" " * 1024)
    assert status == 413 and body["errors"][0]["status"] == "413"
    assert read <= 65, f"read {read} KiB of a 10,000 KiB body past a 64 KiB limit"
    declared = {**headers, "Content-Length": str(10_000 * 1024)}
    declared.pop("Transfer-Encoding")
    status, read, _ = stream(app, method, path, declared, chunks=10_000, chunk=b" " * 1024)
    assert status == 413 and read == 0
    assert table_snapshot(env) == before
    assert env.container.workspaces.find_id("acme", "new") is None


# nesting ------------------------------------------------------------------------------------
def test_deeply_nested_json_is_a_400_everywhere(state_env: Env) -> None:
    env = state_env
    before = table_snapshot(env)
    jsonapi = [
        ("POST", "/api/v2/organizations/acme/workspaces"),
        ("PATCH", f"/api/v2/workspaces/{env.ws_id}"),
        ("POST", f"/api/v2/workspaces/{env.ws_id}/actions/lock"),
        ("POST", "/api/v2/organizations"),
    ]
    for method, path in jsonapi:
        response = env.client.request(method, path, headers=env.auth, content=DEEP)
        assert response.status_code == 400, (path, response.text)
        assert "nested deeper" in response.json()["errors"][0]["detail"]
    for method in ("LOCK", "UNLOCK"):
        response = env.client.request(method, "/state/v1/acme/fresh", headers=basic(env.token), content=DEEP)
        assert response.status_code in (400, 404, 422), response.text  # UNLOCK of an unknown workspace: 404
    for deep in (DEEP, DEEP[:10_000]):  # past the LockInfo size limit (422), or within it (400)
        response = env.client.request("LOCK", "/state/v1/acme/prod", headers=basic(env.token), content=deep)
        assert response.status_code in (400, 422), response.text
    response = env.client.request("LOCK", "/state/v1/acme/prod", headers=basic(env.token), content=DEEP[:10_000])
    assert response.status_code == 400, response.text
    assert env.client.post("/state/v1/acme/fresh", headers=basic(env.token), content=DEEP).status_code == 422
    env.lock()
    before = table_snapshot(env)
    nested_state = b'{"serial": 1, "lineage": "x", "outputs": {"o": {"value": ' + DEEP + b"}}}"
    assert env.push(nested_state, 1, lineage="x").status_code == 422
    assert table_snapshot(env) == before
    assert env.container.workspaces.find_id("acme", "fresh") is None


# serial and lineage -------------------------------------------------------------------------
HUGE = 2**70


def test_state_serial_past_int64_is_refused_inline_two_step_and_http(state_env: Env) -> None:
    env = state_env
    env.lock()
    assert env.push(state_bytes(1), 1).status_code == 201
    assert env.push(state_bytes(2), 2).status_code == 201
    first = env.container.workspaces.load(env.ws_id)
    before = table_snapshot(env)
    for serial in (HUGE, limits.SERIAL_MAX + 1, -1):
        inline = env.push(state_bytes(serial), serial)
        assert inline.status_code == 422, inline.text
        two_step = env.push(None, serial, md5_hex=md5(state_bytes(serial)))
        assert two_step.status_code == 422, two_step.text
        assert two_step.json()["errors"][0]["source"]["pointer"] == "/data/attributes/serial"
        http = env.client.post("/state/v1/acme/prod", headers=basic(env.token), content=state_bytes(serial))
        assert http.status_code == 422, http.text
        created = env.client.post("/state/v1/acme/other", headers=basic(env.token), content=state_bytes(serial))
        assert created.status_code == 422, created.text
    inline_declared_ok = env.push(state_bytes(HUGE), 3)  # the attribute is fine, the file's serial is not
    assert inline_declared_ok.status_code == 422
    for lineage in ("l" * (limits.LINEAGE_MAX + 1), 42):
        body = sv_body(state_bytes(3), 3, lineage=None)
        body["data"]["attributes"]["lineage"] = lineage
        response = env.client.post(f"/api/v2/workspaces/{env.ws_id}/state-versions", headers=env.auth, json=body)
        assert (
            response.status_code == 422
            and response.json()["errors"][0]["source"]["pointer"] == "/data/attributes/lineage"
        )
        http = env.client.post("/state/v1/acme/prod", headers=basic(env.token), content=state_bytes(3, lineage))  # type: ignore[arg-type]
        assert http.status_code == 422, http.text
    assert table_snapshot(env) == before
    assert env.container.workspaces.find_id("acme", "other") is None
    versions = env.client.get(f"/api/v2/workspaces/{env.ws_id}/state-versions", headers=env.auth).json()["data"]
    oldest = versions[-1]["id"]
    rollback = env.client.patch(
        f"/api/v2/workspaces/{env.ws_id}/state-versions",
        headers=env.auth,
        json={
            "data": {
                "type": "state-versions",
                "relationships": {"rollback-state-version": {"data": {"type": "state-versions", "id": oldest}}},
            }
        },
    )
    assert rollback.status_code == 201, rollback.text
    assert rollback.json()["data"]["attributes"]["serial"] == first.state_serial + 1


# http backend LockInfo ----------------------------------------------------------------------
def test_a_huge_lock_info_creates_no_workspace_and_no_lock(state_env: Env) -> None:
    env = state_env
    before = table_snapshot(env)
    huge = json.dumps({**LOCK, "Info": "i" * 1024 * 1024}).encode()
    for url in ("/state/v1/acme/stray", "/state/v1/acme/prod"):
        response = env.client.request("LOCK", url, headers=basic(env.token), content=huge)
        assert response.status_code in (413, 422), response.text
        response = env.client.post(url + "/lock", headers=basic(env.token), content=huge)
        assert response.status_code in (413, 422), response.text
    for bad in ({"ID": 7}, {"ID": "x" * 1000}, ["not", "an", "object"], {"Operation": "apply"}):
        response = env.client.request("LOCK", "/state/v1/acme/stray", headers=basic(env.token), content=json.dumps(bad))
        assert response.status_code == 422, response.text
    assert env.container.workspaces.find_id("acme", "stray") is None
    assert not env.ws().locked
    assert table_snapshot(env) == before
    ok = env.client.request("LOCK", "/state/v1/acme/stray", headers=basic(env.token), content=json.dumps(LOCK))
    assert ok.status_code == 200, ok.text


def test_inline_state_with_bad_base64_or_outputs_is_a_422(state_env: Env) -> None:
    env = state_env
    env.lock()
    before = table_snapshot(env)
    weird = [
        {"serial": 1, "md5": "0" * 32, "state": 5},
        {"serial": 1, "md5": "0" * 32, "json-state-outputs": base64.b64encode(DEEP).decode()},
        {"serial": 1, "md5": "0" * 32, "json-state-outputs": base64.b64encode(b"[1]").decode()},
        {"serial": True, "md5": "0" * 32},
        {"serial": 1.5, "md5": "0" * 32},
    ]
    for attrs in weird:
        body = {"data": {"type": "state-versions", "attributes": {**attrs, "lineage": LINEAGE}}}
        response = env.client.post(f"/api/v2/workspaces/{env.ws_id}/state-versions", headers=env.auth, json=body)
        assert response.status_code == 422, (attrs, response.text)
    assert table_snapshot(env) == before


def test_states_with_malformed_resources_or_overlong_keys(state_env: Env) -> None:
    """Malformed resources are read as absent (no 500); addresses and output names past what the table can key
    are a 422 before anything is stored."""
    env = state_env
    malformed = state_bytes(1, resources=[{"type": "t", "name": "n", "module": [None], "mode": {}, "instances": 5}])
    assert env.client.post("/state/v1/acme/prod", headers=basic(env.token), content=malformed).status_code == 200
    before = table_snapshot(env)
    long_address = state_bytes(2, resources=[{"type": "t", "name": "n" * 2000, "instances": [{"attributes": {}}]}])
    long_output = state_bytes(2, outputs={"o" * 2000: {"value": 1, "type": "number"}})
    empty_output = state_bytes(2, outputs={"": {"value": 1, "type": "number"}})
    for raw in (long_address, long_output, empty_output):
        response = env.client.post("/state/v1/acme/prod", headers=basic(env.token), content=raw)
        assert response.status_code == 422, response.text
    assert table_snapshot(env) == before
    assert len(env.container.blobs.objects) == 1  # type: ignore[attr-defined]  # the first state only


def test_lone_surrogates_are_refused_before_they_are_stored(state_env: Env) -> None:
    """`\\ud800` parses as JSON but cannot be encoded: stored, it made every later read of the workspace a 500."""
    env = state_env
    before = table_snapshot(env)
    lone = b'{"data":{"type":"workspaces","attributes":{"description":"a\\ud800b"}}}'
    response = env.client.patch(f"/api/v2/workspaces/{env.ws_id}", headers=env.auth, content=lone)
    assert response.status_code == 422 and "surrogate" in response.json()["errors"][0]["detail"]
    lock_info = b'{"ID": "l-1", "Info": "\\udfff"}'
    assert (
        env.client.request("LOCK", "/state/v1/acme/x", headers=basic(env.token), content=lock_info).status_code == 422
    )
    state = state_bytes(1).replace(b'"outputs": {}', b'"outputs": {"o": {"value": "\\ud800", "type": "string"}}')
    assert env.client.post("/state/v1/acme/prod", headers=basic(env.token), content=state).status_code == 422
    assert table_snapshot(env) == before
    assert env.client.get(f"/api/v2/workspaces/{env.ws_id}", headers=env.auth).status_code == 200
    paired = b'{"data":{"type":"workspaces","attributes":{"description":"a\\ud83d\\ude00b"}}}'
    response = env.client.patch(f"/api/v2/workspaces/{env.ws_id}", headers=env.auth, content=paired)
    assert response.status_code == 200 and response.json()["data"]["attributes"]["description"] == "a\U0001f600b"


def test_a_large_real_state_is_stored_whole_with_its_summary_cut_to_fit(state_env: Env) -> None:
    """4,000 resources took the state version's record past 400 KB: its summary is cut; state and index are whole."""
    env = state_env
    raw = state_bytes(1, resources=[null_resource(f"r{i}", f"id{i}") for i in range(4000)])
    response = env.client.post("/state/v1/acme/prod", headers=basic(env.token), content=raw)
    assert response.status_code == 200, response.text
    current = env.client.get(f"/api/v2/workspaces/{env.ws_id}/current-state-version", headers=env.auth)
    attributes = current.json()["data"]["attributes"]
    assert attributes["modules"] == {"root": {"null-resource": 4000}}
    assert 0 < len(attributes["resources"]) < 4000
    read = env.client.get("/state/v1/acme/prod", headers=basic(env.token), follow_redirects=False)
    assert read.status_code == 307  # above 1 MiB: from the blob store (test_http_backend_large_states.py)
    assert env.container.blobs.get(read.headers["location"].removeprefix("memory://blobs/").split("?")[0]) == raw
    listed = env.client.get(f"/api/v2/workspaces/{env.ws_id}/resources", headers=env.auth).json()
    assert listed["meta"]["pagination"]["total-count"] == 4000
