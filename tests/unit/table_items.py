"""What a test's memory table stores (the reference implementation's own items), under the held reads the
composition root wraps every table in: for tests that check what is, or is not, stored."""

from __future__ import annotations

from terrace.adapters.held_reads import HeldReadsTable
from terrace.adapters.memory_table import MemoryTable
from terrace.adapters.table import Item, Table


def memory_items(table: Table) -> dict[tuple[str, str], Item]:
    """The items of a memory table, or of the memory table a `HeldReadsTable` wraps, by (pk, sk)."""
    inner = table.inner if isinstance(table, HeldReadsTable) else table
    assert isinstance(inner, MemoryTable), f"not a memory table: {type(inner).__name__}"
    return inner._items
