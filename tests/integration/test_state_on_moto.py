"""The state capability end to end through the app, against DynamoDB and S3 on a moto server."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import pytest
import requests
from aws import clients, create_table_and_bucket
from fastapi.testclient import TestClient
from terrace.adapters.dynamo_table import DynamoTable
from terrace.adapters.s3_blobs import S3Blobs
from terrace.bootstrap import Container
from terrace.config import Settings
from terrace.domain.principal import Principal, PrincipalKind
from terrace.services.events import landed_event
from terrace.web.app import create_app


@pytest.fixture
def app(endpoint: str) -> tuple[Container, TestClient, dict[str, str], str]:
    made = clients(endpoint)
    created = create_table_and_bucket(made)
    settings = Settings(
        table_name=created.table_name,
        blob_bucket=created.bucket,
        url_signing_secret="s",
        aws_endpoint_url=endpoint,
        public_url="https://terrace.test",
    )
    container = Container(
        settings=settings,
        table=DynamoTable(made["dynamodb"], created.table_name),
        blobs=S3Blobs(made["s3"], created.bucket),
    )
    user = container.accounts.create_user("alice")
    principal = Principal(PrincipalKind.USER, user.id, user.username)
    container.organizations.create(principal, "acme", "ops@example.com")
    ws = container.workspaces.create(principal, "acme", {"name": "prod", "execution-mode": "local"})
    token = container.accounts.issue_token(PrincipalKind.USER, user.id).secret
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/vnd.api+json"}
    return container, TestClient(create_app(container)), headers, ws.id


def _state(serial: int) -> bytes:
    return json.dumps(
        {
            "version": 4,
            "terraform_version": "1.6.0",
            "serial": serial,
            "lineage": "lin-1",
            "outputs": {
                "addr": {
                    "value": {"host": "h", "port": 80, "ratio": 0.5},
                    "type": ["object", {"host": "string", "port": "number", "ratio": "number"}],
                },
                "pw": {"value": "x", "type": "string", "sensitive": True},
            },
            "resources": [
                {
                    "mode": "managed",
                    "type": "aws_instance",
                    "name": "web",
                    "provider": 'provider["registry.terraform.io/hashicorp/aws"]',
                    "instances": [
                        {"index_key": k, "attributes": {"id": f"i-{k}", "arn": f"arn:aws:ec2:::i-{k}"}}
                        for k in range(3)
                    ],
                }
            ],
        }
    ).encode()


def test_two_step_upload_download_outputs_and_search(app: tuple[Container, TestClient, dict[str, str], str]) -> None:
    container, client, headers, ws_id = app
    assert client.post(f"/api/v2/workspaces/{ws_id}/actions/lock", headers=headers, json={}).status_code == 200
    raw = _state(1)
    body: dict[str, Any] = {
        "data": {
            "type": "state-versions",
            "attributes": {
                "serial": 1,
                "md5": hashlib.md5(raw).hexdigest(),
                "lineage": "lin-1",
                "json-state-outputs": base64.b64encode(
                    json.dumps({"pw": {"value": "x", "sensitive": True, "type": "string"}}).encode()
                ).decode(),
            },
        }
    }
    r = client.post(f"/api/v2/workspaces/{ws_id}/state-versions", headers=headers, json=body)
    assert r.status_code == 201, r.text
    sv = r.json()["data"]
    attrs = sv["attributes"]
    assert attrs["status"] == "pending"
    assert client.post(f"/api/v2/workspaces/{ws_id}/actions/unlock", headers=headers).status_code == 409

    # the client PUTs straight to S3 with no Authorization header
    for url, data in ((attrs["hosted-state-upload-url"], raw), (attrs["hosted-json-state-upload-url"], b"{}")):
        put = requests.put(url, data=data, headers={"Content-Type": "application/octet-stream"}, timeout=10)
        assert put.status_code == 200, put.text
    for suffix in (".tfstate", ".json"):  # S3's notifications, as the events worker hands them over
        container.events.handle(landed_event(f"state/{ws_id}/{sv['id']}{suffix}"))  # test_state_landed_on_moto.py

    r = client.get(f"/api/v2/state-versions/{sv['id']}", headers=headers)
    final = r.json()["data"]["attributes"]
    assert final["status"] == "finalized" and final["serial"] == 1 and final["size"] == len(raw)
    assert final["hosted-state-download-url"] == f"https://terrace.test/api/v2/state-versions/{sv['id']}/download"
    dl = client.get(f"/api/v2/state-versions/{sv['id']}/download", headers=headers, follow_redirects=False)
    assert dl.status_code == 302
    got = requests.get(dl.headers["location"], timeout=10)
    assert got.status_code == 200 and got.content == raw
    assert client.post(f"/api/v2/workspaces/{ws_id}/actions/unlock", headers=headers).status_code == 200

    # a replayed upload URL (S3 cannot refuse it: terraform sends no If-None-Match) writes a version nobody reads
    forged = _state(1).replace(b'"h"', b'"forged"')
    replay = requests.put(attrs["hosted-state-upload-url"], data=forged, timeout=10)
    assert replay.status_code == 200
    s3, bucket = container.blobs._client, container.blobs._bucket  # type: ignore[attr-defined]
    key = f"state/{ws_id}/{sv['id']}.tfstate"
    record = container.table.get(sv["id"], "sv")
    dl = client.get(f"/api/v2/state-versions/{sv['id']}/download", headers=headers, follow_redirects=False)
    assert requests.get(dl.headers["location"], timeout=10).content == raw
    backend = client.get("/state/v1/acme/prod", auth=("user", headers["Authorization"].split()[1]))
    assert backend.status_code == 200 and backend.content == raw
    client.get(f"/api/v2/state-versions/{sv['id']}", headers=headers)
    client.get(f"/api/v2/workspaces/{ws_id}/current-state-version", headers=headers)
    assert container.table.get(sv["id"], "sv") == record  # reads serve the recorded version and never write
    assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == forged
    assert len(s3.list_object_versions(Bucket=bucket, Prefix=key)["Versions"]) == 2
    container.events.handle(landed_event(key))  # the replay's landing puts the finalized state back
    assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == raw  # the finalized state is current again
    versions = s3.list_object_versions(Bucket=bucket, Prefix=key)["Versions"]
    assert sorted(v["IsLatest"] for v in versions) == [False, False, True]  # the replay is noncurrent: it expires
    restored = container.table.get(sv["id"], "sv")
    assert restored is not None and restored["blob_version"] == s3.head_object(Bucket=bucket, Key=key)["VersionId"]
    container.events.handle(landed_event(key))  # the copy's own landing changes nothing
    assert container.table.get(sv["id"], "sv") == restored
    assert len(s3.list_object_versions(Bucket=bucket, Prefix=key)["Versions"]) == 3
    dl = client.get(f"/api/v2/state-versions/{sv['id']}/download", headers=headers, follow_redirects=False)
    assert requests.get(dl.headers["location"], timeout=10).content == raw

    outs = client.get(f"/api/v2/workspaces/{ws_id}/current-state-version-outputs", headers=headers).json()["data"]
    assert [(o["attributes"]["name"], o["attributes"]["value"]) for o in outs] == [("pw", None)]
    assert final["resources-processed"] is False  # the events worker parses and indexes the upload
    published = container.publisher.events  # type: ignore[attr-defined]
    assert [e["type"] for e in published] == ["state.uploaded"]
    container.events.handle(published.pop())
    res = client.get(f"/api/v2/workspaces/{ws_id}/resources", headers=headers).json()["data"]
    assert [r["attributes"]["address"] for r in res] == [f"aws_instance.web[{k}]" for k in range(3)]
    hits = client.get("/api/v2/organizations/acme/resources?q=arn:aws:ec2:::i-2", headers=headers).json()["data"]
    assert [h["attributes"]["address"] for h in hits] == ["aws_instance.web[2]"]
    assert container.workspaces.load(ws_id).resource_count == 3


def test_inline_write_rejection_and_http_backend_on_moto(
    app: tuple[Container, TestClient, dict[str, str], str],
) -> None:
    container, client, headers, ws_id = app
    client.post(f"/api/v2/workspaces/{ws_id}/actions/lock", headers=headers, json={})
    raw = _state(2)
    body: dict[str, Any] = {
        "data": {
            "type": "state-versions",
            "attributes": {
                "serial": 2,
                "md5": hashlib.md5(raw).hexdigest(),
                "lineage": "lin-1",
                "state": base64.b64encode(raw).decode(),
            },
        }
    }
    r = client.post(f"/api/v2/workspaces/{ws_id}/state-versions", headers=headers, json=body)
    assert r.status_code == 201, r.text
    outs = client.get(f"/api/v2/state-versions/{r.json()['data']['id']}/outputs", headers=headers).json()["data"]
    addr = next(o for o in outs if o["attributes"]["name"] == "addr")
    assert addr["attributes"]["value"] == {"host": "h", "port": 80, "ratio": 0.5}
    lower = _state(1)
    body["data"]["attributes"].update(
        serial=1, md5=hashlib.md5(lower).hexdigest(), state=base64.b64encode(lower).decode()
    )
    assert client.post(f"/api/v2/workspaces/{ws_id}/state-versions", headers=headers, json=body).status_code == 409
    assert container.workspaces.load(ws_id).state_serial == 2
    client.post(f"/api/v2/workspaces/{ws_id}/actions/unlock", headers=headers)

    basic = {"Authorization": "Basic " + base64.b64encode(f"x:{headers['Authorization'][7:]}".encode()).decode()}
    lock = {
        "ID": "lock-1",
        "Operation": "apply",
        "Info": "",
        "Who": "me",
        "Version": "1.0.3",
        "Created": "",
        "Path": "",
    }
    assert client.request("LOCK", "/state/v1/acme/prod", headers=basic, content=json.dumps(lock)).status_code == 200
    assert client.post("/state/v1/acme/prod?ID=lock-1", headers=basic, content=_state(3)).status_code == 200
    got = client.get("/state/v1/acme/prod", headers=basic)
    assert got.status_code == 200 and got.content == _state(3)
    assert client.request("UNLOCK", "/state/v1/acme/prod", headers=basic, content=json.dumps(lock)).status_code == 200
