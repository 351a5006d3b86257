"""In-memory twin of the DynamoDB table for unit tests. Same conditions, same ordering."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from terrace.adapters.table import Check, ConditionFailed, Delete, Item, Put, WriteOp, copy_value
from terrace.domain.limits import check_item

_INDEX_KEYS = {"gsi1": ("gsi1pk", "gsi1sk")}


class MemoryTable:
    def __init__(self) -> None:
        self._items: dict[tuple[str, str], Item] = {}
        self._lock = threading.RLock()

    def get(self, pk: str, sk: str) -> Item | None:
        with self._lock:
            item = self._items.get((pk, sk))
            return copy_value(item) if item is not None else None

    def batch_get(self, keys: Sequence[tuple[str, str]]) -> list[Item]:
        with self._lock:
            return [copy_value(self._items[k]) for k in dict.fromkeys(keys) if k in self._items]  # as DynamoDB

    def put(self, item: Item, *, if_absent: bool = False, if_version: int | None = None) -> None:
        self.transact([Put(item, if_absent=if_absent, if_version=if_version)])

    def delete(self, pk: str, sk: str, *, if_version: int | None = None) -> None:
        self.transact([Delete(pk, sk, if_version=if_version)])

    def batch_put(self, items: Sequence[Item]) -> None:
        for item in items:
            check_item(item)  # all refused before any is written, as the DynamoDB adapter does
        for item in items:
            self.put(item)

    def batch_delete(self, keys: Sequence[tuple[str, str]]) -> None:
        for pk, sk in keys:
            self.delete(pk, sk)

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
        with self._lock:
            found = [
                copy_value(item)
                for item in self._items.values()
                if item.get(pk_name) == pk
                and sk_name in item
                and (prefix is None or str(item[sk_name]).startswith(prefix))
                and (after is None or str(item[sk_name]) > after)
            ]
        found.sort(key=lambda item: (item[sk_name], item["pk"], item["sk"]), reverse=reverse)
        return found[:limit] if limit is not None else found

    def purge_expired(self, now: float | None = None) -> int:
        """The TTL sweep, as `SqliteTable.purge_expired` (DynamoDB's own sweep runs on its schedule)."""
        cutoff = int(time.time() if now is None else now)
        with self._lock:
            expired = [
                k
                for k, item in self._items.items()
                if isinstance(item.get("expires_at"), int | float) and item["expires_at"] < cutoff
            ]
            for key in expired:
                del self._items[key]
        return len(expired)

    def transact(self, ops: Sequence[WriteOp]) -> None:
        for op in ops:
            if isinstance(op, Put):
                check_item(op.item)  # as DynamoDB would refuse it
        with self._lock:
            for op in ops:
                key = (op.item["pk"], op.item["sk"]) if isinstance(op, Put) else (op.pk, op.sk)
                current = self._items.get(key)
                if isinstance(op, Put) and op.if_absent and current is not None:
                    raise ConditionFailed(f"{key} exists")
                if isinstance(op, Check) and op.must_exist and current is None:
                    raise ConditionFailed(f"{key} missing")
                if isinstance(op, Check) and not op.must_exist and current is not None:
                    raise ConditionFailed(f"{key} exists")
                if op.if_version is not None and (current is None or current.get("version") != op.if_version):
                    raise ConditionFailed(f"{key} changed")
            for op in ops:
                if isinstance(op, Put):
                    self._items[(op.item["pk"], op.item["sk"])] = copy_value(op.item)
                elif isinstance(op, Delete):
                    self._items.pop((op.pk, op.sk), None)
