"""DynamoTable against moto: conditions, transactions, gsi queries, batch_get, number round trips."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from aws import clients, create_table_and_bucket, moto_server
from terrace.adapters.dynamo_table import DynamoTable
from terrace.adapters.table import Check, ConditionFailed, Delete, Put


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with moto_server() as url:
        yield url


@pytest.fixture
def table(endpoint: str) -> DynamoTable:
    made = clients(endpoint)
    return DynamoTable(made["dynamodb"], create_table_and_bucket(made).table_name)


def test_put_get_conditions(table: DynamoTable) -> None:
    table.put({"pk": "a", "sk": "x", "version": 1, "n": 5})
    with pytest.raises(ConditionFailed):
        table.put({"pk": "a", "sk": "x", "version": 2}, if_absent=True)
    with pytest.raises(ConditionFailed):
        table.put({"pk": "a", "sk": "x", "version": 2}, if_version=7)
    table.put({"pk": "a", "sk": "x", "version": 2, "n": 6}, if_version=1)
    assert table.get("a", "x") == {"pk": "a", "sk": "x", "version": 2, "n": 6}
    with pytest.raises(ConditionFailed):
        table.delete("a", "x", if_version=1)
    table.delete("a", "x", if_version=2)
    assert table.get("a", "x") is None


def test_number_and_nested_round_trip(table: DynamoTable) -> None:
    item: dict[str, Any] = {
        "pk": "n",
        "sk": "n",
        "int": 42,
        "float": 1.5,
        "big": 2**53,
        "flag": True,
        "none": None,
        "nested": {"list": [1, 2.25, "s", {"deep": 0}], "empty": ""},
    }
    table.put(item)
    got = table.get("n", "n")
    assert got == item
    assert isinstance(got["int"], int) and isinstance(got["float"], float)


def test_transactions_are_all_or_nothing(table: DynamoTable) -> None:
    table.put({"pk": "ws", "sk": "ws", "version": 1})
    with pytest.raises(ConditionFailed):
        table.transact(
            [
                Put({"pk": "ws", "sk": "ws", "version": 2}, if_version=1),
                Put({"pk": "sv", "sk": "sv"}, if_absent=True),
                Check("missing", "x"),
            ]
        )
    assert table.get("ws", "ws")["version"] == 1 and table.get("sv", "sv") is None  # type: ignore[index]
    table.transact(
        [Put({"pk": "ws", "sk": "ws", "version": 2}, if_version=1), Put({"pk": "sv", "sk": "sv"}, if_absent=True)]
    )
    assert table.get("ws", "ws")["version"] == 2 and table.get("sv", "sv") is not None  # type: ignore[index]
    table.transact([Delete("sv", "sv"), Check("ws", "ws", if_version=2), Check("gone", "x", must_exist=False)])
    assert table.get("sv", "sv") is None


def test_gsi_queries_in_order_with_prefix_reverse_and_limit(table: DynamoTable) -> None:
    for i in (3, 1, 2):
        table.put({"pk": f"sv-{i}", "sk": "sv", "gsi1pk": "ws#state-versions", "gsi1sk": f"2024-01-0{i}#sv-{i}"})
        table.put({"pk": "ws#resources", "sk": f"null_resource.r{i}"})
    assert [i["pk"] for i in table.query("ws#state-versions", index="gsi1")] == ["sv-1", "sv-2", "sv-3"]
    assert [i["pk"] for i in table.query("ws#state-versions", index="gsi1", reverse=True, limit=2)] == ["sv-3", "sv-2"]
    assert [i["sk"] for i in table.query("ws#resources", prefix="null_resource.r2")] == ["null_resource.r2"]


def test_batch_get_many_keys(table: DynamoTable) -> None:
    for i in range(130):
        table.put({"pk": f"k{i}", "sk": "x", "i": i})
    got = table.batch_get([(f"k{i}", "x") for i in range(135)] + [("k0", "x")])
    assert sorted(item["i"] for item in got) == list(range(130))


def test_batch_put_and_delete_in_chunks(table: DynamoTable) -> None:
    items = [{"pk": "bulk", "sk": f"{i:03}", "n": i, "tags": ["a", i]} for i in range(60)]
    table.batch_put([*items, {"pk": "bulk", "sk": "000", "n": -1, "tags": []}])  # a repeated key: last one wins
    got = table.query("bulk")
    assert [item["n"] for item in got] == [-1, *range(1, 60)] and got[1]["tags"] == ["a", 1]
    table.batch_delete([("bulk", f"{i:03}") for i in range(0, 60, 2)] + [("bulk", "missing"), ("bulk", "002")])
    assert [item["n"] for item in table.query("bulk")] == list(range(1, 60, 2))
    table.batch_put([])
    table.batch_delete([])


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
