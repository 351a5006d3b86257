"""Reads never write: a two-step state upload that landed is finalized by the landing (the `blob.landed` event: S3's
notification through the events worker, the embedded blob server's PUT) or by the client's unlock, never by a
GET. Until then every read answers from the record: the version `pending`, the current version the previous one.
(On moto: `tests/integration/test_state_landed_on_moto.py`.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from state_helpers import Env, blob_url_path, embedded_env, md5, null_resource, state_bytes
from table_writes import spy_writes as spy_table_writes
from test_web_ui import signed_in


def spy_writes(env: Env, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every call of the table port's write methods, by name."""
    return spy_table_writes(env.container.table, monkeypatch)


def _read_everything(env: Env, sv_id: str) -> dict[str, Any]:
    """Every read of the upload's workspace a client or the UI makes; the version's own attributes."""
    api, ws = "/api/v2", env.ws_id
    name = env.ws().name
    for path in (
        f"{api}/workspaces/{ws}/current-state-version",
        f"{api}/workspaces/{ws}/state-versions",
        f"{api}/state-versions?filter[organization][name]=acme&filter[workspace][name]={name}",
        f"{api}/state-versions/{sv_id}/outputs",
        f"{api}/workspaces/{ws}/current-state-version-outputs",
        f"{api}/workspaces/{ws}/resources",
    ):
        assert env.client.get(path, headers=env.auth).status_code == 200, path
    assert env.client.get(f"/state/v1/acme/{name}", auth=("user", env.token)).status_code == 200
    for path in (f"{api}/state-versions/{sv_id}/download", f"{api}/state-versions/{sv_id}/json-download"):
        assert env.client.get(path, headers=env.auth, follow_redirects=False).status_code in (302, 404), path
    got = env.client.get(f"{api}/state-versions/{sv_id}", headers=env.auth)
    assert got.status_code == 200
    return dict(got.json()["data"]["attributes"])


def _current(env: Env) -> str:
    got = env.client.get(f"/api/v2/workspaces/{env.ws_id}/current-state-version", headers=env.auth)
    return str(got.json()["data"]["id"])


def test_a_landed_upload_reads_pending_without_a_write_until_its_event(
    state_env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = state_env
    env.lock()
    first = env.push(state_bytes(1), 1).json()["data"]["id"]
    raw = state_bytes(2, resources=[null_resource("a", "1")])
    sv = env.push(None, 2, md5_hex=md5(raw)).json()["data"]
    key = f"state/{env.ws_id}/{sv['id']}.tfstate"
    env.container.blobs.put(key, raw)  # landed; its event not handled yet
    browser = signed_in(env)

    writes = spy_writes(env, monkeypatch)
    attrs = _read_everything(env, sv["id"])
    pages = ("", "/states", f"/states/{sv['id']}")
    for page in pages:  # the UI's workspace and state pages
        assert browser.get(f"/acme/workspaces/{env.ws().name}{page}").status_code in (200, 404), page
    assert writes == []
    assert attrs["status"] == "pending" and attrs["hosted-state-download-url"] is None
    assert _current(env) == first and env.ws().state_serial == 1
    assert writes == []

    env.land(key, raw)  # the events worker handles S3's notification: a write, triggered by the upload's write
    assert writes != []
    assert env.client.get(f"/api/v2/state-versions/{sv['id']}", headers=env.auth).json()["data"]["attributes"][
        "status"
    ] == ("finalized")
    assert _current(env) == sv["id"] and env.ws().state_serial == 2


def test_a_landing_for_no_state_version_changes_nothing(state_env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    env = state_env
    writes = spy_writes(env, monkeypatch)
    for key in ("state/x/unknown.tfstate", f"state/{env.ws_id}/sv-aaaaaaaaaaaaaaaa.tfstate", "config/ws/cv.tar.gz"):
        assert env.container.state_versions.finalize_uploaded(key) is None
    env.container.events.handle({"Service": "Amazon S3", "Event": "s3:TestEvent"})  # what S3 sends first
    assert writes == []


def test_an_s3_notification_finalizes_like_the_landed_event(state_env: Env) -> None:
    env = state_env
    env.lock()
    raw = state_bytes(1)
    sv = env.push(None, 1, md5_hex=md5(raw)).json()["data"]
    key = f"state/{env.ws_id}/{sv['id']}.tfstate"
    env.container.blobs.put(key, raw)
    record = {"eventSource": "aws:s3", "eventName": "ObjectCreated:Put", "s3": {"object": {"key": key, "size": 1}}}
    env.container.events.handle({"Records": [record]})
    assert env.ws().current_state_version_id == sv["id"]


@pytest.fixture
def embedded(tmp_path: Path) -> Iterator[Env]:
    with embedded_env(tmp_path / "data", "local", url_signing_secret="landed-secret") as env:
        yield env


_path = blob_url_path


@pytest.mark.parametrize("json_first", [False, True])
def test_the_embedded_servers_put_finalizes_and_reads_write_nothing(
    embedded: Env, monkeypatch: pytest.MonkeyPatch, json_first: bool
) -> None:
    env = embedded
    env.lock()
    raw = state_bytes(1, outputs={"o": {"value": 1, "type": "number"}})
    sv = env.push(None, 1, md5_hex=md5(raw)).json()["data"]
    attrs = sv["attributes"]
    json_state = b'{"format_version":"1.0"}'
    puts = [(attrs["hosted-state-upload-url"], raw), (attrs["hosted-json-state-upload-url"], json_state)]
    for url, body in reversed(puts) if json_first else puts:  # go-tfe PUTs both at once: either lands first
        assert env.client.put(_path(url), content=body).status_code == 200
    assert env.ws().current_state_version_id == sv["id"]  # finalized by the PUT, before any read

    writes = spy_writes(env, monkeypatch)
    read = _read_everything(env, sv["id"])
    assert writes == []
    assert read["status"] == "finalized"
    assert read["hosted-json-state-download-url"].endswith(f"/state-versions/{sv['id']}/json-download")
    assert env.client.post(f"/api/v2/workspaces/{env.ws_id}/actions/unlock", headers=env.auth).status_code == 200
