"""The http state backend at /state/v1/{org}/{workspace}: same workspaces, history and locks as the TFC API."""

from __future__ import annotations

import base64
import hashlib
import json

from state_helpers import Env, null_resource, other_user, state_bytes
from terrace.domain.principal import PrincipalKind

LOCK = {
    "ID": "0b6c1e0e-aaaa-bbbb-cccc-000000000001",
    "Operation": "OperationTypeApply",
    "Info": "",
    "Who": "alice@laptop",
    "Version": "1.0.3",
    "Created": "2024-01-01T00:00:00Z",
    "Path": "",
}


def basic(token: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"anyone:{token}".encode()).decode()}


def md5_header(body: bytes) -> dict[str, str]:
    return {"Content-MD5": base64.b64encode(hashlib.md5(body).digest()).decode()}


def test_auth_is_basic_with_token_password_or_bearer(state_env: Env) -> None:
    env = state_env
    url = f"/state/v1/{env.org}/prod"
    for headers in (
        {},
        {"Authorization": "Basic " + base64.b64encode(b"u:wrong").decode()},
        {"Authorization": "Basic %%%"},
    ):
        r = env.client.get(url, headers=headers)
        assert r.status_code == 401 and r.headers["www-authenticate"] == 'Basic realm="terrace"'
        assert "error" in r.json()
    assert env.client.get(url, headers=basic(env.token)).status_code == 204
    assert env.client.get(url, headers={"Authorization": f"Bearer {env.token}"}).status_code == 204


def test_full_cycle_lock_write_read_unlock(state_env: Env) -> None:
    env = state_env
    url = f"/state/v1/{env.org}/newws"
    h = basic(env.token)
    assert env.client.get(url, headers=h).status_code == 204  # unknown workspace reads as no state
    assert env.container.workspaces.find_id(env.org, "newws") is None
    r = env.client.request("LOCK", url, headers=h, content=json.dumps(LOCK))
    assert r.status_code == 200
    ws_id = env.container.workspaces.find_id(env.org, "newws")
    assert ws_id is not None and env.ws(ws_id).lock.lock_id == LOCK["ID"]
    body = state_bytes(1, resources=[null_resource("a", "1")])
    r = env.client.post(f"{url}?ID={LOCK['ID']}", headers={**h, **md5_header(body)}, content=body)
    assert r.status_code == 200, r.text
    got = env.client.get(url, headers=h)
    assert got.status_code == 200 and got.content == body
    assert got.headers["content-md5"] == md5_header(body)["Content-MD5"]
    # the same history is visible through the TFC API
    cur = env.client.get(f"/api/v2/workspaces/{ws_id}/current-state-version", headers=env.auth).json()["data"]
    assert cur["attributes"]["serial"] == 1
    r = env.client.request("UNLOCK", url, headers=h, content=json.dumps(LOCK))
    assert r.status_code == 200 and not env.ws(ws_id).locked
    r = env.client.request("UNLOCK", url, headers=h, content=json.dumps(LOCK))
    assert r.status_code == 409 and "unlocked" in r.json()["detail"]


def test_unknown_org_is_404(state_env: Env) -> None:
    r = state_env.client.get("/state/v1/nope/prod", headers=basic(state_env.token))
    assert r.status_code == 404 and r.json()["error"] == "not found"
    token, _ = other_user(state_env)
    assert state_env.client.get(f"/state/v1/{state_env.org}/prod", headers=basic(token)).status_code == 404


def test_lock_conflict_returns_holders_lockinfo(state_env: Env) -> None:
    env = state_env
    url = f"/state/v1/{env.org}/prod"
    h = basic(env.token)
    assert env.client.request("LOCK", url, headers=h, content=json.dumps(LOCK)).status_code == 200
    second = {**LOCK, "ID": "another"}
    r = env.client.request("LOCK", url, headers=h, content=json.dumps(second))
    assert r.status_code == 423 and r.json() == LOCK


def test_tfc_api_lock_synthesizes_lockinfo(state_env: Env) -> None:
    env = state_env
    env.lock()  # via the TFC API, reason "test"
    r = env.client.request("LOCK", f"/state/v1/{env.org}/prod", headers=basic(env.token), content=json.dumps(LOCK))
    assert r.status_code == 423
    info = r.json()
    assert info["ID"] == f"{env.org}/prod" and info["Who"] == "alice" and info["Info"] == "test"
    assert set(info) == {"ID", "Operation", "Info", "Who", "Version", "Created", "Path"}


def test_write_lock_rules(state_env: Env) -> None:
    env = state_env
    url = f"/state/v1/{env.org}/prod"
    h = basic(env.token)
    body = state_bytes(1)
    # unlocked workspace: plain POST works (no lock_address configured)
    assert env.client.post(url, headers=h, content=body).status_code == 200
    env.client.request("LOCK", url, headers=h, content=json.dumps(LOCK))
    token, principal = other_user(env)
    env.container.organizations.add_owner(env.org, principal.subject_id)
    before = env.stored()
    r = env.client.post(f"{url}?ID=wrong", headers=h, content=state_bytes(2))
    assert r.status_code == 409 and r.json()["ID"] == LOCK["ID"]
    r = env.client.post(url, headers=basic(token), content=state_bytes(2))
    assert r.status_code == 423 and r.json() == LOCK
    assert env.stored() == before
    assert env.client.post(f"{url}?ID={LOCK['ID']}", headers=h, content=state_bytes(2)).status_code == 200


def test_write_rejections_change_nothing(state_env: Env) -> None:
    env = state_env
    url = f"/state/v1/{env.org}/prod"
    h = basic(env.token)
    assert env.client.post(url, headers=h, content=state_bytes(3)).status_code == 200
    before = env.stored()
    assert env.client.post(url, headers=h, content=b"{nope").status_code == 422
    assert env.client.post(url, headers=h, content=b'{"serial": 4}').status_code == 422
    assert env.client.post(url, headers=h, content=state_bytes(2)).status_code == 409
    assert (
        env.client.post(url, headers=h, content=state_bytes(3, resources=[null_resource("x", "y")])).status_code == 409
    )
    assert env.client.post(url, headers=h, content=state_bytes(4, lineage="other")).status_code == 409
    body = state_bytes(4)
    assert (
        env.client.post(url, headers={**h, "Content-MD5": md5_header(b"x")["Content-MD5"]}, content=body).status_code
        == 400
    )
    assert env.client.post(f"{url}?ID=some-lock", headers=h, content=body).status_code == 409  # lock gone
    assert env.stored() == before
    assert env.client.post(url, headers=h, content=state_bytes(3)).status_code == 200  # idempotent re-post
    assert env.stored() == before


def test_force_unlock_variants(state_env: Env) -> None:
    env = state_env
    url = f"/state/v1/{env.org}/prod"
    h = basic(env.token)
    env.client.request("LOCK", url, headers=h, content=json.dumps(LOCK))
    assert env.client.request("UNLOCK", url, headers=h, content=b"").status_code == 200  # terraform force-unlock
    assert not env.ws().locked
    env.client.request("LOCK", url, headers=h, content=json.dumps(LOCK))
    r = env.client.request("UNLOCK", url, headers=h, content=json.dumps({"ID": "not-it"}))
    assert r.status_code == 423 and env.ws().locked
    r = env.client.request("UNLOCK", url, headers=h, content=json.dumps({"ID": LOCK["ID"]}))  # tofu force-unlock
    assert r.status_code == 200 and not env.ws().locked


def test_force_unlock_needs_permission(state_env: Env) -> None:
    env = state_env
    other_ws = env.new_workspace("runner-ws")
    run_token = env.container.accounts.issue_token(
        PrincipalKind.RUN, "run-1", organization=env.org, workspace_id=other_ws
    ).secret
    url = f"/state/v1/{env.org}/runner-ws"
    assert env.client.request("LOCK", url, headers=basic(run_token), content=json.dumps(LOCK)).status_code == 200
    r = env.client.request("UNLOCK", url, headers=basic(run_token), content=b"")
    assert r.status_code == 403 and env.ws(other_ws).locked


def test_delete_removes_history_only_when_unlocked(state_env: Env) -> None:
    env = state_env
    url = f"/state/v1/{env.org}/prod"
    h = basic(env.token)
    env.client.post(url, headers=h, content=state_bytes(1, resources=[null_resource("a", "1")]))
    env.client.request("LOCK", url, headers=h, content=json.dumps(LOCK))
    before = env.stored()
    r = env.client.delete(url, headers=h)
    assert r.status_code == 423 or r.status_code == 409
    assert env.stored() == before
    env.client.request("UNLOCK", url, headers=h, content=json.dumps(LOCK))
    assert env.client.delete(url, headers=h).status_code == 200
    assert env.client.get(url, headers=h).status_code == 204
    ws = env.ws()
    assert ws.current_state_version_id is None and ws.resource_count == 0
    assert not env.container.blobs.objects
    assert env.client.delete(f"/state/v1/{env.org}/never-existed", headers=h).status_code == 200


def test_bad_lock_bodies(state_env: Env) -> None:
    env = state_env
    url = f"/state/v1/{env.org}/prod"
    h = basic(env.token)
    assert env.client.request("LOCK", url, headers=h, content=b"not json").status_code == 422
    assert env.client.request("LOCK", url, headers=h, content=b'{"Who": "x"}').status_code == 422
    assert env.client.request("UNLOCK", url, headers=h, content=b"[1]").status_code == 422
    assert not env.ws().locked


def test_lock_address_with_standard_methods_for_cloudfront(state_env: Env) -> None:
    """CloudFront passes no LOCK/UNLOCK: `<address>/lock` answers POST (lock) and DELETE (unlock)."""
    env = state_env
    url, h = f"/state/v1/{env.org}/cdn", basic(env.token)
    assert env.client.post(f"{url}/lock", headers=h, content=json.dumps(LOCK)).status_code == 200
    other = env.client.post(f"{url}/lock", headers=h, content=json.dumps({**LOCK, "ID": "other"}))
    assert other.status_code == 423 and other.json() == LOCK
    assert env.client.request("DELETE", f"{url}/lock", headers=h, content=json.dumps(LOCK)).status_code == 200
    assert env.client.post(f"{url}/lock", headers=h, content=json.dumps({**LOCK, "ID": "other"})).status_code == 200
