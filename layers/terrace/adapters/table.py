"""The narrow storage port every service uses: one key-value table with conditional writes.

Items are plain dicts keyed by `pk`/`sk`. Optimistic concurrency uses an integer `version`
attribute: a writer passes the version it read and the write fails with `ConditionFailed`
if someone else got there first. `gsi1pk`/`gsi1sk` give ordered child listings.
Every adapter refuses a Put past `domain.limits.ITEM_MAX_BYTES` (or with a number DynamoDB cannot store)
with `ItemTooLarge`/`Invalid` before writing anything, so a transaction is refused whole.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

Item = dict[str, Any]

_SHARED = frozenset({str, int, float, bool, bytes, type(None)})  # immutable: a copy may share them


def copy_value(value: Any) -> Any:
    """A deep copy of an item or a value in one, as `copy.deepcopy` makes it, several times faster on what items
    hold (dicts, lists, strings, numbers): the memory adapters and the held reads copy every item they hand out or
    take in. Any other type (a set, a Decimal, a subclass) goes through `copy.deepcopy`."""
    kind = type(value)
    if kind in _SHARED:
        return value
    if kind is dict:
        return {key: copy_value(inner) for key, inner in value.items()}
    if kind is list:
        return [copy_value(inner) for inner in value]
    return copy.deepcopy(value)


class ConditionFailed(Exception):
    """A conditional write lost: the item exists, is missing, or changed since it was read."""


@dataclass(frozen=True)
class Put:
    item: Item
    if_absent: bool = False
    if_version: int | None = None


@dataclass(frozen=True)
class Delete:
    pk: str
    sk: str
    if_version: int | None = None


@dataclass(frozen=True)
class Check:
    pk: str
    sk: str
    if_version: int | None = None
    must_exist: bool = True


WriteOp = Put | Delete | Check


class Table(Protocol):
    def get(self, pk: str, sk: str) -> Item | None: ...

    def batch_get(self, keys: Sequence[tuple[str, str]]) -> list[Item]: ...

    def put(self, item: Item, *, if_absent: bool = False, if_version: int | None = None) -> None: ...

    def delete(self, pk: str, sk: str, *, if_version: int | None = None) -> None: ...

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
        """Items of partition `pk` (of `index`'s partition, if given), sorted by their sort key; `prefix`: only sort
        keys that begin with it; `after`: only sort keys greater than it (a reader that has the rest reads on from
        there). `prefix` and `after` are not given together."""
        ...

    def transact(self, ops: Sequence[WriteOp]) -> None: ...

    def batch_put(self, items: Sequence[Item]) -> None:
        """Unconditional, non-transactional puts (derived data only: each item lands on its own)."""
        ...

    def batch_delete(self, keys: Sequence[tuple[str, str]]) -> None:
        """Unconditional, non-transactional deletes of (pk, sk) keys; missing keys are fine."""
        ...
