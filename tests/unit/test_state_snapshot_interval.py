"""`X-Terraform-Snapshot-Interval` on the responses a `cloud` client reads it from (go-tfe's response hook in
OpenTofu/Terraform `cloud/state.go`): it counts only on JSON:API responses, and every such response of the
state calls overrides the last one, so each of them (the current-state-version 404 too) must carry it."""

from __future__ import annotations

from state_helpers import Env, make_env, md5, state_bytes, sv_body
from terrace.config import Settings

JSONAPI = "application/vnd.api+json"


def _interval(response) -> str | None:  # type: ignore[no-untyped-def]
    """What the client's hook reads: the header, only when the Content-Type is JSON:API."""
    assert JSONAPI in response.headers.get("content-type", ""), response.headers
    return response.headers.get("x-terraform-snapshot-interval")


def _settings(interval_s: int) -> Settings:
    return Settings(
        table_name="memory", blob_bucket="memory", url_signing_secret="s", state_snapshot_interval_s=interval_s
    )


def test_every_state_call_of_a_cloud_client_carries_the_interval() -> None:
    env: Env = make_env(_settings(300))
    env.lock()
    # refreshState before the first persist: ReadCurrent -> 404 (no state yet)
    missing = env.client.get(f"/api/v2/workspaces/{env.ws_id}/current-state-version", headers=env.auth)
    assert missing.status_code == 404 and _interval(missing) == "300"
    # StateVersions.Upload: create without `state` -> PUT to the upload URL -> Read(sv.ID)
    raw = state_bytes(1)
    created = env.push(None, 1, md5_hex=md5(raw))
    assert created.status_code == 201 and _interval(created) == "300"
    data = created.json()["data"]
    key = data["attributes"]["hosted-state-upload-url"].removeprefix("memory://blobs/").split("?", 1)[0]
    env.container.blobs.put(key, raw)  # type: ignore[attr-defined]
    reread = env.client.get(f"/api/v2/state-versions/{data['id']}", headers=env.auth)
    assert reread.status_code == 200 and _interval(reread) == "300"
    # the fallback (inline `state`) and the next refresh
    inline = env.client.post(
        f"/api/v2/workspaces/{env.ws_id}/state-versions", headers=env.auth, json=sv_body(state_bytes(2), 2)
    )
    assert inline.status_code == 201 and _interval(inline) == "300"
    current = env.client.get(f"/api/v2/workspaces/{env.ws_id}/current-state-version", headers=env.auth)
    assert current.status_code == 200 and _interval(current) == "300"
    # not on unrelated responses
    other = env.client.get(f"/api/v2/workspaces/{env.ws_id}", headers=env.auth)
    assert "x-terraform-snapshot-interval" not in other.headers


def test_zero_disables_intermediate_snapshots() -> None:
    env = make_env(_settings(0))
    response = env.client.get(f"/api/v2/workspaces/{env.ws_id}/current-state-version", headers=env.auth)
    assert "x-terraform-snapshot-interval" not in response.headers


def test_the_interval_is_a_setting_clamped_to_an_hour() -> None:
    assert Settings.from_env({"TERRACE_TABLE": "t", "TERRACE_BLOB_BUCKET": "b"}).state_snapshot_interval_s == 300
    settings = Settings.from_env(
        {
            "TERRACE_TABLE": "t",
            "TERRACE_BLOB_BUCKET": "b",
            "TERRACE_URL_SIGNING_SECRET": "test-signing-key",
            "TERRACE_STATE_SNAPSHOT_INTERVAL_S": "7200",
        }
    )
    env = make_env(settings)
    response = env.client.get(f"/api/v2/workspaces/{env.ws_id}/current-state-version", headers=env.auth)
    assert _interval(response) == "3600"
