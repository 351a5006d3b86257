"""DynamoTable against moto, what is DynamoDB's own: batch writes that DynamoDB leaves unprocessed are retried.
The Table port's semantics (conditions, transactions, gsi queries, batches, round trips) are checked over moto
by tests/contract/test_table_contract.py."""

from __future__ import annotations

from typing import Any

import pytest
from aws import clients, create_table_and_bucket
from terrace.adapters.dynamo_table import DynamoTable


@pytest.fixture
def table(endpoint: str) -> DynamoTable:
    made = clients(endpoint)
    return DynamoTable(made["dynamodb"], create_table_and_bucket(made).table_name)


class _Throttling:
    """A client whose batch_write_item first leaves half of each request unprocessed (as DynamoDB may)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.calls = inner, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def batch_write_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:  # noqa: N803 - boto3's name
        self.calls += 1
        ((name, requests),) = RequestItems.items()
        if len(requests) > 1:
            half = len(requests) // 2
            self.inner.batch_write_item(RequestItems={name: requests[:half]})
            return {"UnprocessedItems": {name: requests[half:]}}
        return dict(self.inner.batch_write_item(RequestItems=RequestItems))


def test_batch_write_retries_unprocessed_items(table: DynamoTable) -> None:
    client = _Throttling(table._client)
    throttled = DynamoTable(client, table._name)
    throttled.batch_put([{"pk": "retry", "sk": str(i)} for i in range(30)])
    assert len(table.query("retry")) == 30 and client.calls > 2
    throttled.batch_delete([("retry", str(i)) for i in range(30)])
    assert table.query("retry") == []
