"""The table's item-size guard against DynamoDB (moto): past 400 KiB is a 413 through the API, never a 500,
and nothing is written: no half of a transaction, no stray workspace, no lock."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from aws import clients, create_table_and_bucket
from fastapi.testclient import TestClient
from terrace.adapters.dynamo_table import DynamoTable
from terrace.adapters.s3_blobs import S3Blobs
from terrace.adapters.table import Put
from terrace.bootstrap import Container
from terrace.config import Settings
from terrace.domain.limits import ITEM_MAX_BYTES, ItemTooLarge
from terrace.domain.principal import Principal, PrincipalKind
from terrace.web.app import create_app


@pytest.fixture
def stack(endpoint: str) -> tuple[Container, TestClient, str, Any, str]:
    made = clients(endpoint)
    created = create_table_and_bucket(made)
    settings = Settings(
        table_name=created.table_name, blob_bucket=created.bucket, url_signing_secret="s", aws_endpoint_url=endpoint
    )
    table = DynamoTable(made["dynamodb"], created.table_name)
    container = Container(settings=settings, table=table, blobs=S3Blobs(made["s3"], created.bucket))
    user = container.accounts.create_user("alice")
    principal = Principal(PrincipalKind.USER, user.id, user.username)
    container.organizations.create(principal, "acme", "ops@example.com")
    container.workspaces.create(principal, "acme", {"name": "prod", "execution-mode": "local"})
    token = container.accounts.issue_token(PrincipalKind.USER, user.id).secret
    return container, TestClient(create_app(container)), token, made["dynamodb"], created.table_name


def scan(dynamodb: Any, table_name: str) -> list[str]:
    """The table's items but the audit trail's events (a refused request is recorded too: that is its job)."""
    items = dynamodb.scan(TableName=table_name, ConsistentRead=True)["Items"]
    data = [item for item in items if not item["pk"]["S"].startswith("audit#")]
    return sorted(json.dumps(item, sort_keys=True) for item in data)


def test_a_transaction_with_an_item_past_the_limit_writes_nothing(stack: Any) -> None:
    container, _, _, dynamodb, table_name = stack
    before = scan(dynamodb, table_name)
    big = {"pk": "big", "sk": "x", "blob": "b" * ITEM_MAX_BYTES}
    with pytest.raises(ItemTooLarge):
        container.table.transact([Put({"pk": "small", "sk": "x"}, if_absent=True), Put(big)])
    with pytest.raises(ItemTooLarge):
        container.table.put(big)
    with pytest.raises(ItemTooLarge):
        container.table.batch_put([{"pk": "small", "sk": "y"}, big])
    assert scan(dynamodb, table_name) == before
    near = {"pk": "near", "sk": "x", "blob": "b" * (ITEM_MAX_BYTES - 1024)}
    container.table.put(near)  # just under the guard: DynamoDB takes it
    assert container.table.get("near", "x") == near


def test_past_400kb_through_the_api_is_a_413_and_changes_nothing(stack: Any) -> None:
    container, client, token, dynamodb, table_name = stack
    ws_id = container.workspaces.find_id("acme", "prod")
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/vnd.api+json"}
    assert client.get("/api/v2/account/details", headers=headers).status_code == 200  # records the token's first use
    before = scan(dynamodb, table_name)
    tags = [{"type": "tags", "attributes": {"name": f"t{i:04d}-" + "x" * 80}} for i in range(5000)]
    response = client.post(f"/api/v2/workspaces/{ws_id}/relationships/tags", headers=headers, json={"data": tags})
    assert response.status_code == 413, response.text
    assert response.json()["errors"][0]["status"] == "413"
    basic = {"Authorization": "Basic " + base64.b64encode(f"x:{token}".encode()).decode()}
    lock_info = json.dumps({"ID": "lock-1", "Operation": "apply", "Info": "i" * 1024 * 1024})
    response = client.request("LOCK", "/state/v1/acme/stray", headers=basic, content=lock_info)
    assert response.status_code in (413, 422), response.text
    workspace = {"data": {"type": "workspaces", "attributes": {"name": "big", "source-url": "u" * 500_000}}}
    response = client.post("/api/v2/organizations/acme/workspaces", headers=headers, json=workspace)
    assert response.status_code in (413, 422), response.text
    assert scan(dynamodb, table_name) == before
    assert container.workspaces.find_id("acme", "stray") is None
    assert not container.workspaces.load(ws_id).locked
