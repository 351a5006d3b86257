"""What a test's memory table stores (the reference implementation's own items), under the held reads the
composition root wraps every table in: for tests that check what is, or is not, stored."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from table_writes import audit_event
from terrace.adapters.held_reads import HeldReadsTable
from terrace.adapters.memory_table import MemoryTable
from terrace.adapters.table import Item, Table


class _Data(Mapping[tuple[str, str], Item]):
    """A live view of a memory table's items but the audit trail's events."""

    def __init__(self, items: dict[tuple[str, str], Item]) -> None:
        self._items = items

    def __getitem__(self, key: tuple[str, str]) -> Item:
        item = self._items[key]
        if audit_event(item):
            raise KeyError(key)
        return item

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter([key for key, item in self._items.items() if not audit_event(item)])

    def __len__(self) -> int:
        return sum(1 for item in self._items.values() if not audit_event(item))


def memory_items(table: Table, audit: bool = False) -> Mapping[tuple[str, str], Item]:
    """The items of a memory table, or of the memory table a `HeldReadsTable` wraps, by (pk, sk), as they are now
    and later (a live view); the audit trail's events (which name what every request touched, by id) only with
    `audit`: a test of what a deletion leaves, or a refusal writes, is about the data."""
    inner = table.inner if isinstance(table, HeldReadsTable) else table
    assert isinstance(inner, MemoryTable), f"not a memory table: {type(inner).__name__}"
    return inner._items if audit else _Data(inner._items)
