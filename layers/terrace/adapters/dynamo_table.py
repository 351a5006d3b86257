"""DynamoDB implementation of the Table port.

A write DynamoDB refuses because another transaction holds one of its items (`TransactionConflictException`, or a
transaction cancelled with `TransactionConflict` among its reasons and no failed condition) did not happen and did
not lose a condition: it is sent again, CONFLICT_ATTEMPTS times in all with a jittered back-off, then its
`ClientError` goes up, which the web layer answers 503 with `Retry-After` (`storage_errors.py`), never a 500 nor a
409. A cancelled transaction with a failed condition is `ConditionFailed`: the caller re-reads and re-decides.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import Binary, TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError
from tenacity import RetryCallState, Retrying, retry_if_exception, retry_if_result, stop_after_attempt

from terrace.adapters.storage_errors import dynamo_conflict
from terrace.adapters.table import ConditionFailed, Delete, Item, Put, WriteOp
from terrace.domain.limits import check_item

_INDEX_KEYS = {"gsi1": ("gsi1pk", "gsi1sk")}
BATCH_WRITE_SIZE = 25  # BatchWriteItem's limit
BATCH_WRITE_ATTEMPTS = 8  # UnprocessedItems retries, with exponential back-off from BATCH_BACKOFF_S
BATCH_BACKOFF_S = 0.05
CONFLICT_ATTEMPTS = 4  # a write another transaction held: tries in all, back-off from CONFLICT_BACKOFF_S
CONFLICT_BACKOFF_S = 0.02
_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


def _to_dynamo(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, float | int):
        return Decimal(str(value))
    if isinstance(value, dict):
        return {k: _to_dynamo(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_to_dynamo(v) for v in value]
    return value


def _from_dynamo(value: Any) -> Any:
    if isinstance(value, Binary):
        return bytes(value.value)
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _from_dynamo(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_dynamo(v) for v in value]
    return value


def _marshal(item: Item) -> dict[str, Any]:
    check_item(item)  # refused before DynamoDB sees it: a client error, never a 500
    return {k: _serializer.serialize(_to_dynamo(v)) for k, v in item.items()}


def _unmarshal(raw: dict[str, Any]) -> Item:
    return {k: _from_dynamo(_deserializer.deserialize(v)) for k, v in raw.items()}


def _key(pk: str, sk: str) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def _condition(
    if_absent: bool = False, if_version: int | None = None, must_exist: bool | None = None
) -> dict[str, Any]:
    if if_version is not None:
        return {
            "ConditionExpression": "#v = :v",
            "ExpressionAttributeNames": {"#v": "version"},
            "ExpressionAttributeValues": {":v": {"N": str(if_version)}},
        }
    if if_absent or must_exist is False:
        return {"ConditionExpression": "attribute_not_exists(pk)"}
    if must_exist:
        return {"ConditionExpression": "attribute_exists(pk)"}
    return {}


def _conflict(exc: BaseException) -> bool:
    return isinstance(exc, ClientError) and dynamo_conflict(exc.response)


def _conflict_wait(state: RetryCallState) -> float:
    return CONFLICT_BACKOFF_S * 2 ** (state.attempt_number - 1) * (0.5 + random.random())  # noqa: S311 - jitter


def _batch_wait(state: RetryCallState) -> float:
    return min(2.0, BATCH_BACKOFF_S * 2 ** (state.attempt_number - 1))


def _sent(write: Callable[[], object], sleep: Callable[[float], None]) -> None:
    """`write` sent again while DynamoDB refuses it for a conflict (`dynamo_conflict`); its last refusal goes up."""
    retrying = Retrying(
        stop=stop_after_attempt(CONFLICT_ATTEMPTS),
        wait=_conflict_wait,
        retry=retry_if_exception(_conflict),
        sleep=sleep,
        reraise=True,
    )
    retrying(write)


class DynamoTable:
    def __init__(self, client: Any, table_name: str, sleep: Callable[[float], None] = time.sleep) -> None:
        self._client = client
        self._name = table_name
        self._sleep = sleep  # the retries' back-off (tests: a recording one)

    def get(self, pk: str, sk: str) -> Item | None:
        raw = self._client.get_item(TableName=self._name, Key=_key(pk, sk), ConsistentRead=True).get("Item")
        return _unmarshal(raw) if raw else None

    def batch_get(self, keys: Sequence[tuple[str, str]]) -> list[Item]:
        found: list[Item] = []
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), 100):
            pending: dict[str, Any] = {
                self._name: {"Keys": [_key(pk, sk) for pk, sk in unique[start : start + 100]], "ConsistentRead": True}
            }
            while pending:
                response = self._client.batch_get_item(RequestItems=pending)
                found.extend(_unmarshal(raw) for raw in response["Responses"].get(self._name, []))
                pending = response.get("UnprocessedKeys") or {}
        return found

    def put(self, item: Item, *, if_absent: bool = False, if_version: int | None = None) -> None:
        try:
            condition = _condition(if_absent, if_version)
            _sent(lambda: self._client.put_item(TableName=self._name, Item=_marshal(item), **condition), self._sleep)
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                raise ConditionFailed(str(exc)) from exc
            raise

    def delete(self, pk: str, sk: str, *, if_version: int | None = None) -> None:
        try:
            condition = _condition(if_version=if_version)
            _sent(lambda: self._client.delete_item(TableName=self._name, Key=_key(pk, sk), **condition), self._sleep)
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                raise ConditionFailed(str(exc)) from exc
            raise

    def batch_put(self, items: Sequence[Item]) -> None:
        unique = {(item["pk"], item["sk"]): item for item in items}  # one request may not name a key twice
        self._batch_write([{"PutRequest": {"Item": _marshal(item)}} for item in unique.values()])

    def batch_delete(self, keys: Sequence[tuple[str, str]]) -> None:
        self._batch_write([{"DeleteRequest": {"Key": _key(pk, sk)}} for pk, sk in dict.fromkeys(keys)])

    def _batch_write(self, requests: list[dict[str, Any]]) -> None:
        for start in range(0, len(requests), BATCH_WRITE_SIZE):
            pending: dict[str, Any] = {self._name: requests[start : start + BATCH_WRITE_SIZE]}

            def send() -> dict[str, Any]:  # what is left unprocessed is sent again, alone
                nonlocal pending
                pending = self._client.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}
                return pending

            Retrying(
                stop=stop_after_attempt(BATCH_WRITE_ATTEMPTS),
                wait=_batch_wait,
                retry=retry_if_result(bool),
                retry_error_callback=lambda state: None,  # what is still pending is the error below
                sleep=self._sleep,
            )(send)
            if pending:
                left = len(pending.get(self._name, []))
                raise RuntimeError(f"DynamoDB left {left} batch writes unprocessed after {BATCH_WRITE_ATTEMPTS} tries")

    def query(
        self,
        pk: str,
        *,
        prefix: str | None = None,
        index: str | None = None,
        reverse: bool = False,
        limit: int | None = None,
        after: str | None = None,
    ) -> list[Item]:
        pk_name, sk_name = _INDEX_KEYS[index] if index else ("pk", "sk")
        expression = "#pk = :pk"
        values: dict[str, Any] = {":pk": {"S": pk}}
        names = {"#pk": pk_name}
        if prefix:
            expression += " AND begins_with(#sk, :prefix)"
            values[":prefix"] = {"S": prefix}
            names["#sk"] = sk_name
        elif after:  # "" is every key (a key is never empty)
            expression += " AND #sk > :after"
            values[":after"] = {"S": after}
            names["#sk"] = sk_name
        kwargs: dict[str, Any] = {
            "TableName": self._name,
            "KeyConditionExpression": expression,
            "ExpressionAttributeValues": values,
            "ExpressionAttributeNames": names,
            "ScanIndexForward": not reverse,
        }
        if index:
            kwargs["IndexName"] = index
        else:
            kwargs["ConsistentRead"] = True
        found: list[Item] = []
        while True:
            if limit is not None:
                kwargs["Limit"] = limit - len(found)
            response = self._client.query(**kwargs)
            found.extend(_unmarshal(raw) for raw in response.get("Items", []))
            last = response.get("LastEvaluatedKey")
            if not last or (limit is not None and len(found) >= limit):
                return found
            kwargs["ExclusiveStartKey"] = last

    def transact(self, ops: Sequence[WriteOp]) -> None:
        single = ops[0] if len(ops) == 1 else None
        if isinstance(single, Put):
            self.put(single.item, if_absent=single.if_absent, if_version=single.if_version)
            return
        if isinstance(single, Delete):
            self.delete(single.pk, single.sk, if_version=single.if_version)
            return
        items: list[dict[str, Any]] = []
        for op in ops:
            if isinstance(op, Put):
                items.append(
                    {
                        "Put": {
                            "TableName": self._name,
                            "Item": _marshal(op.item),
                            **_condition(op.if_absent, op.if_version),
                        }
                    }
                )
            elif isinstance(op, Delete):
                items.append(
                    {
                        "Delete": {
                            "TableName": self._name,
                            "Key": _key(op.pk, op.sk),
                            **_condition(if_version=op.if_version),
                        }
                    }
                )
            else:
                cond = _condition(if_version=op.if_version, must_exist=op.must_exist)
                items.append({"ConditionCheck": {"TableName": self._name, "Key": _key(op.pk, op.sk), **cond}})
        try:
            _sent(lambda: self._client.transact_write_items(TransactItems=items), self._sleep)
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "TransactionCanceledException" and not dynamo_conflict(exc.response):
                raise ConditionFailed(str(exc)) from exc
            raise
