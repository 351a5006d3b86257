"""Reads held for one use case: inside `held_reads()`, a table read twice is read once (the mechanism of the
stores' unit of work, `services/unit_of_work.py`, which use cases open).

A use case that spans services (creating a run, finishing a plan) reads the same workspace, run or list of run
tasks in several of them; each read is a DynamoDB request on AWS. `HeldReadsTable` wraps any table: inside a
`held_reads()` scope (a context variable, so per thread and per request) it answers a `get` or a `query` it has
already answered from what it read; outside one it passes every call through.

What is held stays true to the scope's own writes: a write holds what it wrote (the item, or its absence) and
forgets the queries of its partitions, of the index partitions its items enter and those that list its items; a
write that fails (a lost conditional write, whose caller re-reads and decides again) forgets everything. Writes
of other requests are not seen until the scope ends, which is what a read-decide-write step needs anyway: its
conditional write refuses a stale decision. A scope never holds a read that polls (the runner's long-poll for a
job, a log read waiting for its output): only use cases that read, decide and write open one.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from terrace.adapters import definitions as defs
from terrace.adapters.table import Check, Delete, Item, Put, Table, WriteOp, copy_value


@dataclass
class _Held:
    items: dict[tuple[str, str], Item | None] = field(default_factory=dict)
    queries: dict[tuple[Any, ...], list[Item]] = field(default_factory=dict)

    def forget(self, ops: Sequence[WriteOp]) -> None:
        """Before writes: the items they touch, the queries of their partitions, and the index queries that list one
        of those items (it may leave) or of an index partition a written item enters."""
        keys = {_op_key(op) for op in ops}
        partitions = {pk for pk, _ in keys}
        entered = {
            (index, str(op.item[attr]))
            for op in ops
            if isinstance(op, Put)
            for index, attr in INDEX_PARTITION_KEYS.items()
            if attr in op.item
        }

        def kept(query: tuple[Any, ...], found: list[Item]) -> bool:
            pk, index = query[0], query[2]
            if index is None:
                return pk not in partitions
            return (index, pk) not in entered and not any((i.get("pk"), i.get("sk")) in keys for i in found)

        self.queries = {q: found for q, found in self.queries.items() if kept(q, found)}
        for key in keys:
            self.items.pop(key, None)

    def wrote(self, ops: Sequence[WriteOp]) -> None:
        """After writes that succeeded: the table holds what they wrote (as the memory table, the reference)."""
        for op in ops:
            if isinstance(op, Put):
                self.items[_op_key(op)] = copy_value(op.item)
            elif isinstance(op, Delete):
                self.items[_op_key(op)] = None


INDEX_PARTITION_KEYS = {index.name: index.partition_key.name for index in defs.TABLE.global_indexes}
_scope: ContextVar[_Held | None] = ContextVar("terrace_held_reads", default=None)


@contextmanager
def held_reads() -> Iterator[None]:
    """Hold the table's reads until the block ends (a nested scope joins the one open)."""
    if _scope.get() is not None:
        yield
        return
    token = _scope.set(_Held())
    try:
        yield
    finally:
        _scope.reset(token)


def _op_key(op: WriteOp) -> tuple[str, str]:
    if isinstance(op, Put):
        return str(op.item["pk"]), str(op.item["sk"])
    return op.pk, op.sk


class HeldReadsTable:
    """A `Table` whose reads are held inside `held_reads()`, around any implementation (the composition root
    wraps every table in one). It is a table of its own, not a disguise of the one it wraps: what only an
    implementation has (the embedded table's TTL sweep, a test's look at the memory table's items) is reached
    through `inner`."""

    def __init__(self, inner: Table) -> None:
        self._inner = inner

    @property
    def inner(self) -> Table:
        """The table it wraps."""
        return self._inner

    # reads -------------------------------------------------------------------------------------
    def get(self, pk: str, sk: str) -> Item | None:
        held = _scope.get()
        if held is None:
            return self._inner.get(pk, sk)
        if (pk, sk) not in held.items:
            found = self._inner.get(pk, sk)
            held.items[(pk, sk)] = copy_value(found)
            return found
        return copy_value(held.items[(pk, sk)])

    def batch_get(self, keys: Sequence[tuple[str, str]]) -> list[Item]:
        held = _scope.get()
        if held is None:
            return self._inner.batch_get(keys)
        wanted = list(dict.fromkeys(keys))
        missing = [key for key in wanted if key not in held.items]
        if missing:
            fetched = {(str(i["pk"]), str(i["sk"])): i for i in self._inner.batch_get(missing)}
            for key in missing:
                held.items[key] = copy_value(fetched.get(key))
        return [copy_value(item) for key in wanted if (item := held.items[key]) is not None]

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
        held = _scope.get()
        if held is None:
            return self._inner.query(pk, prefix=prefix, index=index, reverse=reverse, limit=limit, after=after)
        key = (pk, prefix, index, reverse, limit, after)
        if key not in held.queries:
            held.queries[key] = self._inner.query(
                pk, prefix=prefix, index=index, reverse=reverse, limit=limit, after=after
            )
        return copy_value(held.queries[key])

    # writes ------------------------------------------------------------------------------------
    def _writing(self, ops: Sequence[WriteOp]) -> _Held | None:
        held = _scope.get()
        if held is not None:
            held.forget([op for op in ops if not isinstance(op, Check)])
        return held

    def _failed(self, held: _Held | None) -> None:
        if held is not None:
            held.items.clear()
            held.queries.clear()

    def put(self, item: Item, *, if_absent: bool = False, if_version: int | None = None) -> None:
        held = self._writing([Put(item, if_absent=if_absent)])
        try:
            self._inner.put(item, if_absent=if_absent, if_version=if_version)
        except Exception:
            self._failed(held)
            raise
        if held is not None:
            held.wrote([Put(item)])

    def delete(self, pk: str, sk: str, *, if_version: int | None = None) -> None:
        held = self._writing([Delete(pk, sk)])
        try:
            self._inner.delete(pk, sk, if_version=if_version)
        except Exception:
            self._failed(held)
            raise
        if held is not None:
            held.wrote([Delete(pk, sk)])

    def transact(self, ops: Sequence[WriteOp]) -> None:
        held = self._writing(ops)
        try:
            self._inner.transact(ops)
        except Exception:
            self._failed(held)
            raise
        if held is not None:
            held.wrote(ops)

    def batch_put(self, items: Sequence[Item]) -> None:
        held = self._writing([Put(i) for i in items])
        try:
            self._inner.batch_put(items)
        except Exception:
            self._failed(held)
            raise

    def batch_delete(self, keys: Sequence[tuple[str, str]]) -> None:
        held = self._writing([Delete(pk, sk) for pk, sk in keys])
        try:
            self._inner.batch_delete(keys)
        except Exception:
            self._failed(held)
            raise


__all__ = ["HeldReadsTable", "held_reads"]
