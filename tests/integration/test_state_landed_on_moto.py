"""On moto, as on AWS: a two-step state upload PUT straight to S3 is finalized by the bucket's event notification
(`definitions.STATE_LANDED`, seeded by `local/resources.py`) through the events queue and its worker, never by a
read; until then the version reads `pending` and no read writes the table."""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

import pytest
import requests
from fastapi.testclient import TestClient
from table_writes import spy_writes
from terrace.bootstrap import Container, build_aws
from terrace.config import Settings
from terrace.domain.principal import Principal, PrincipalKind
from terrace.services.events import landed_event
from terrace.web.app import create_app
from terrace.wiring.local_resources import create_resources


def _state(serial: int) -> bytes:
    doc = {"version": 4, "terraform_version": "1.9.0", "serial": serial, "lineage": "lin-1", "outputs": {}}
    return json.dumps({**doc, "resources": []}).encode()


def _work_the_queue(container: Container) -> int:
    """What the events worker does (`local/workers.py`, the events Lambda): hand every queued event over."""
    queue, handled = container.event_queue, 0
    assert queue is not None
    while received := queue.receive(max_events=10):
        for event in received:
            container.events.handle(event.body)
            queue.ack(event.receipt)
            handled += 1
    return handled


def test_an_upload_put_to_s3_is_finalized_by_its_notification_not_by_a_read(
    endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    resources = create_resources(endpoint, f"l{uuid.uuid4().hex[:8]}")
    settings = Settings(
        **resources.settings_fields(),
        aws_endpoint_url=endpoint,
        url_signing_secret="s",
        public_url="https://terrace.test",
    )
    container = build_aws(settings)
    _work_the_queue(container)  # S3's s3:TestEvent, sent when the notification was configured: ignored
    user = container.accounts.create_user("alice")
    principal = Principal(PrincipalKind.USER, user.id, user.username)
    container.organizations.create(principal, "acme", "ops@example.com")
    ws = container.workspaces.create(principal, "acme", {"name": "prod", "execution-mode": "local"})
    token = container.accounts.issue_token(PrincipalKind.USER, user.id).secret
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/vnd.api+json"}
    client = TestClient(create_app(container))
    assert client.post(f"/api/v2/workspaces/{ws.id}/actions/lock", headers=headers).status_code == 200
    raw = _state(1)
    body = {"data": {"type": "state-versions", "attributes": {"serial": 1, "md5": hashlib.md5(raw).hexdigest()}}}
    created = client.post(f"/api/v2/workspaces/{ws.id}/state-versions", headers=headers, json=body)
    assert created.status_code == 201, created.text
    sv = created.json()["data"]
    for url, data in (
        (sv["attributes"]["hosted-state-upload-url"], raw),
        (sv["attributes"]["hosted-json-state-upload-url"], b"{}"),
    ):
        assert requests.put(url, data=data, timeout=10).status_code == 200

    writes = spy_writes(container.table, monkeypatch)
    read = client.get(f"/api/v2/state-versions/{sv['id']}", headers=headers).json()["data"]["attributes"]
    current = client.get(f"/api/v2/workspaces/{ws.id}/current-state-version", headers=headers)
    listed = client.get(f"/api/v2/workspaces/{ws.id}/state-versions", headers=headers)
    assert writes == [] and read["status"] == "pending"
    assert current.status_code == 404 and listed.json()["data"][0]["attributes"]["status"] == "pending"

    assert _work_the_queue(container) >= 2  # the two objects' notifications, then `state.uploaded` published
    read = client.get(f"/api/v2/state-versions/{sv['id']}", headers=headers).json()["data"]["attributes"]
    assert read["status"] == "finalized" and read["hosted-json-state-download-url"] is not None
    assert (
        client.get(f"/api/v2/workspaces/{ws.id}/current-state-version", headers=headers).json()["data"]["id"]
        == sv["id"]
    )
    assert read["resources-processed"] is True  # the worker indexed it too (state.uploaded came through the queue)


def test_a_replayed_state_upload_is_undone_by_its_landing_and_reads_never_write(
    endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A replayed upload URL writes over a finalized state object (S3 cannot refuse it). Reads keep serving the
    recorded object version and write nothing; the replay's notification copies the recorded version back (and
    that copy's own notification changes nothing), even when a second delivery of it races the first."""
    resources = create_resources(endpoint, f"r{uuid.uuid4().hex[:8]}")
    settings = Settings(
        **resources.settings_fields(), aws_endpoint_url=endpoint, url_signing_secret="s", public_url="https://t.test"
    )
    container = build_aws(settings)
    user = container.accounts.create_user("alice")
    principal = Principal(PrincipalKind.USER, user.id, user.username)
    container.organizations.create(principal, "acme", "ops@example.com")
    ws = container.workspaces.create(principal, "acme", {"name": "prod", "execution-mode": "local"})
    token = container.accounts.issue_token(PrincipalKind.USER, user.id).secret
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/vnd.api+json"}
    client = TestClient(create_app(container))
    assert client.post(f"/api/v2/workspaces/{ws.id}/actions/lock", headers=headers).status_code == 200
    raw = _state(1)
    body = {"data": {"type": "state-versions", "attributes": {"serial": 1, "md5": hashlib.md5(raw).hexdigest()}}}
    sv = client.post(f"/api/v2/workspaces/{ws.id}/state-versions", headers=headers, json=body).json()["data"]
    url = sv["attributes"]["hosted-state-upload-url"]
    assert requests.put(url, data=raw, timeout=10).status_code == 200
    _work_the_queue(container)
    s3, bucket = container.blobs._client, container.blobs._bucket  # type: ignore[attr-defined]
    key = f"state/{ws.id}/{sv['id']}.tfstate"
    finalized = container.table.get(sv["id"], "sv")
    assert finalized is not None and finalized["status"] == "finalized"

    forged = _state(1).replace(b'"lin-1"', b'"lin-1", "forged": true')
    assert requests.put(url, data=forged, timeout=10).status_code == 200  # the replay
    writes = spy_writes(container.table, monkeypatch)
    download = client.get(f"/api/v2/state-versions/{sv['id']}/download", headers=headers, follow_redirects=False)
    assert requests.get(download.headers["location"], timeout=10).content == raw
    backend = client.get("/state/v1/acme/prod", auth=("user", token))
    assert backend.status_code == 200 and backend.content == raw
    assert client.get(f"/api/v2/state-versions/{sv['id']}", headers=headers).status_code == 200
    assert writes == [] and container.table.get(sv["id"], "sv") == finalized  # no read wrote anything
    assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == forged
    monkeypatch.undo()

    # a second delivery of the replay's notification runs to its end between the first's copy and its record
    original_put = container.table.put
    competitor: list[Any] = [lambda: container.events.handle(landed_event(key))]

    def racing_put(item: dict[str, Any], **conditions: Any) -> None:
        if item["sk"] == "sv" and competitor:
            competitor.pop()()
        original_put(item, **conditions)

    monkeypatch.setattr(container.table, "put", racing_put)
    assert _work_the_queue(container) >= 1
    monkeypatch.undo()
    assert competitor == []  # the race happened
    assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == raw  # the finalized state is current again
    versions = s3.list_object_versions(Bucket=bucket, Prefix=key)["Versions"]
    assert len(versions) == 4  # finalized, replay, and one copy of each delivery: the loser's copy is noncurrent
    current = [v["VersionId"] for v in versions if v["IsLatest"]]
    restored = container.table.get(sv["id"], "sv")
    assert restored is not None and [restored["blob_version"]] == current  # what is recorded is what is current
    assert _work_the_queue(container) == 0  # the copies' notifications (handled above) changed nothing more
    assert container.table.get(sv["id"], "sv") == restored
    download = client.get(f"/api/v2/state-versions/{sv['id']}/download", headers=headers, follow_redirects=False)
    assert requests.get(download.headers["location"], timeout=10).content == raw
