"""DynamoDB refusing a write because another transaction held one of its items (found by the proof's state load
on the AWS adapters): the adapter sends the same write again a few times, then lets the refusal up, which the API
answers 503 with `Retry-After`; a transaction cancelled for a failed condition stays `ConditionFailed`."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError
from terrace.adapters import dynamo_table
from terrace.adapters.dynamo_table import DynamoTable
from terrace.adapters.storage_errors import storage_failure
from terrace.adapters.table import Check, ConditionFailed, Put

ITEM = {"pk": "ws#1", "sk": "meta", "version": 1}
TRANSACTION = [Put(ITEM, if_version=0), Check("org#1", "meta", if_version=3)]


def _error(code: str, *reasons: str) -> ClientError:
    body: Any = {"Error": {"Code": code, "Message": "m"}, "ResponseMetadata": {"HTTPStatusCode": 400}}
    if reasons:
        body["CancellationReasons"] = [{"Code": reason} for reason in reasons]
    return ClientError(body, "TransactWriteItems")


class Refusing:
    """A DynamoDB client whose writes are refused with `errors`, one per call, then succeed."""

    def __init__(self, *errors: ClientError) -> None:
        self.errors = list(errors)
        self.calls: list[str] = []

    def _write(self, name: str) -> dict[str, Any]:
        self.calls.append(name)
        if self.errors:
            raise self.errors.pop(0)
        return {}

    def put_item(self, **_: Any) -> dict[str, Any]:
        return self._write("put_item")

    def delete_item(self, **_: Any) -> dict[str, Any]:
        return self._write("delete_item")

    def transact_write_items(self, **_: Any) -> dict[str, Any]:
        return self._write("transact_write_items")


@pytest.fixture(autouse=True)
def _no_back_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dynamo_table, "CONFLICT_BACKOFF_S", 0.0)


def test_a_transaction_cancelled_by_a_conflict_is_sent_again() -> None:
    client = Refusing(
        _error("TransactionCanceledException", "None", "TransactionConflict"),
        _error("TransactionCanceledException", "TransactionConflict", "None"),
    )
    DynamoTable(client, "t").transact(TRANSACTION)
    assert client.calls == ["transact_write_items"] * 3


@pytest.mark.parametrize("method", ["put", "delete"])
def test_a_single_write_in_another_transaction_is_sent_again(method: str) -> None:
    client = Refusing(_error("TransactionConflictException"))
    table = DynamoTable(client, "t")
    if method == "put":
        table.put(ITEM, if_version=0)
    else:
        table.delete("ws#1", "meta", if_version=1)
    assert client.calls == [f"{method}_item"] * 2


def test_a_lasting_conflict_goes_up_as_a_storage_failure_after_a_few_tries() -> None:
    conflict = _error("TransactionCanceledException", "TransactionConflict", "None")
    client = Refusing(*[conflict] * (dynamo_table.CONFLICT_ATTEMPTS + 1))
    with pytest.raises(ClientError) as raised:
        DynamoTable(client, "t").transact(TRANSACTION)
    assert len(client.calls) == dynamo_table.CONFLICT_ATTEMPTS
    failure = storage_failure(raised.value)
    assert failure is not None and failure.status == 503


def test_a_failed_condition_is_condition_failed_at_once_even_beside_a_conflict() -> None:
    client = Refusing(_error("TransactionCanceledException", "TransactionConflict", "ConditionalCheckFailed"))
    with pytest.raises(ConditionFailed):
        DynamoTable(client, "t").transact(TRANSACTION)
    assert client.calls == ["transact_write_items"]


def test_other_refusals_are_not_retried() -> None:
    client = Refusing(_error("ValidationException"))
    with pytest.raises(ClientError):
        DynamoTable(client, "t").put(ITEM)
    assert client.calls == ["put_item"]
