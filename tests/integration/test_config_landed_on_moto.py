"""On moto, as on AWS: a configuration archive PUT straight to S3 makes its version `uploaded` through the bucket's
event notification (`definitions.CONFIG_LANDED`) through the events queue and its worker, never through a read;
until then the version reads `pending` and no read writes the table."""

from __future__ import annotations

import uuid

import pytest
import requests
from aws import config_archive
from fastapi.testclient import TestClient
from table_writes import spy_writes
from terrace.bootstrap import build_aws
from terrace.config import Settings
from terrace.domain.principal import Principal, PrincipalKind
from terrace.web.app import create_app
from terrace.wiring.local_resources import create_resources
from test_state_landed_on_moto import _work_the_queue


def test_an_archive_put_to_s3_is_finalized_by_its_notification_not_by_a_read(
    endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    resources = create_resources(endpoint, f"c{uuid.uuid4().hex[:8]}")
    settings = Settings(
        **resources.settings_fields(), aws_endpoint_url=endpoint, url_signing_secret="s", public_url="https://t.test"
    )
    container = build_aws(settings)
    _work_the_queue(container)  # S3's s3:TestEvent: ignored
    user = container.accounts.create_user("alice")
    principal = Principal(PrincipalKind.USER, user.id, user.username)
    container.organizations.create(principal, "acme", "ops@example.com")
    ws = container.workspaces.create(principal, "acme", {"name": "prod", "execution-mode": "local"})
    token = container.accounts.issue_token(PrincipalKind.USER, user.id).secret
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/vnd.api+json"}
    client = TestClient(create_app(container))
    body = {"data": {"type": "configuration-versions", "attributes": {"auto-queue-runs": False}}}
    created = client.post(f"/api/v2/workspaces/{ws.id}/configuration-versions", headers=headers, json=body)
    assert created.status_code == 201, created.text
    cv = created.json()["data"]
    assert requests.put(cv["attributes"]["upload-url"], data=config_archive(), timeout=10).status_code == 200

    writes = spy_writes(container.table, monkeypatch)
    read = client.get(f"/api/v2/configuration-versions/{cv['id']}", headers=headers).json()["data"]["attributes"]
    listed = client.get(f"/api/v2/workspaces/{ws.id}/configuration-versions", headers=headers).json()["data"]
    assert writes == [] and read["status"] == "pending" and listed[0]["attributes"]["status"] == "pending"
    monkeypatch.undo()

    assert _work_the_queue(container) >= 1  # the archive's notification
    read = client.get(f"/api/v2/configuration-versions/{cv['id']}", headers=headers).json()["data"]["attributes"]
    assert read["status"] == "uploaded"
    recorded = container.table.get(cv["id"], "cv")
    assert recorded is not None and recorded["size"] == len(config_archive()) and recorded["md5"]
