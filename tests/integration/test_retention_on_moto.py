"""The data retention sweep against DynamoDB and S3 on a moto server (what the reaper Lambda runs on AWS): the
sweep is claimed with a conditional write in DynamoDB, and old state files leave S3 while the current one stays."""

from __future__ import annotations

import base64
import hashlib
import json
import time

from aws import clients, create_table_and_bucket
from fastapi.testclient import TestClient
from terrace.adapters.dynamo_table import DynamoTable
from terrace.adapters.s3_blobs import S3Blobs
from terrace.bootstrap import Container
from terrace.config import Settings
from terrace.domain import state_versions as st
from terrace.domain.principal import PrincipalKind
from terrace.services.workflows.retention_sweep import RetentionSweep
from terrace.services.workflows.store import SweepClaimStore
from terrace.web.app import create_app


def test_the_sweep_on_dynamodb_and_s3(endpoint: str) -> None:
    made = clients(endpoint)
    created = create_table_and_bucket(made)
    settings = Settings(
        table_name=created.table_name, blob_bucket=created.bucket, url_signing_secret="s", aws_endpoint_url=endpoint
    )
    container = Container(
        settings=settings,
        table=DynamoTable(made["dynamodb"], created.table_name),
        blobs=S3Blobs(made["s3"], created.bucket),
    )
    user = container.accounts.create_user("alice")
    token = container.accounts.issue_token(PrincipalKind.USER, user.id).secret
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/vnd.api+json"}
    client = TestClient(create_app(container))
    org = {"data": {"type": "organizations", "attributes": {"name": "acme", "email": "ops@example.com"}}}
    assert client.post("/api/v2/organizations", headers=headers, json=org).status_code == 201
    ws = {"data": {"type": "workspaces", "attributes": {"name": "prod", "execution-mode": "local"}}}
    ws_id = client.post("/api/v2/organizations/acme/workspaces", headers=headers, json=ws).json()["data"]["id"]
    assert client.post(f"/api/v2/workspaces/{ws_id}/actions/lock", headers=headers, json={}).status_code == 200
    ids = []
    for serial in (1, 2):
        raw = json.dumps({"version": 4, "serial": serial, "lineage": "l", "outputs": {}, "resources": []}).encode()
        attrs = {"serial": serial, "md5": hashlib.md5(raw).hexdigest(), "state": base64.b64encode(raw).decode()}
        body = {"data": {"type": "state-versions", "attributes": attrs}}
        created_sv = client.post(f"/api/v2/workspaces/{ws_id}/state-versions", headers=headers, json=body)
        assert created_sv.status_code == 201, created_sv.text
        ids.append(created_sv.json()["data"]["id"])
    assert client.post(f"/api/v2/workspaces/{ws_id}/actions/unlock", headers=headers).status_code == 200
    policy = {"data": {"type": "data-retention-policies", "attributes": {"delete-older-than-n-days": 7}}}
    path = f"/api/v2/workspaces/{ws_id}/relationships/data-retention-policy"
    assert client.patch(path, headers=headers, json=policy).status_code == 200

    later = time.time() + 8 * 86400
    sweep = RetentionSweep(
        SweepClaimStore(container.table),
        container.blobs,
        container.organizations,
        container.workspaces,
        container.retention_policies,
        container.configuration_versions,
        container.run_store,
        container.state_store,
        now=lambda: later,
    )
    swept = sweep.sweep_if_due(3600)
    assert swept is not None and swept["state_versions"] == 1
    assert sweep.sweep_if_due(3600) is None  # this hour's sweep is claimed in DynamoDB
    old, current = ids
    assert container.blobs.head(st.state_blob_key(ws_id, old)) is None
    assert container.blobs.head(st.state_blob_key(ws_id, current)) is not None
    shown = client.get(f"/api/v2/state-versions/{old}", headers=headers).json()["data"]["attributes"]
    assert shown["status"] == "backing_data_permanently_deleted"
