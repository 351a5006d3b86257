"""The implementations every port's contract runs against (parameter ids), and a table of each."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from aws import clients, create_table_and_bucket
from terrace.adapters.dynamo_table import DynamoTable
from terrace.adapters.held_reads import HeldReadsTable, held_reads
from terrace.adapters.memory_table import MemoryTable
from terrace.adapters.sqlite_table import SqliteDatabase, SqliteTable
from terrace.adapters.table import Table

IMPLEMENTATIONS = ["memory", "sqlite", "moto"]  # "sqlite" names the embedded server's adapter of each port
# the table the composition root builds: each implementation under the held reads (adapters/held_reads.py), used
# outside a scope and inside an open one (the stores' unit of work, services/unit_of_work.py)
HELD_TABLES = [f"held-{kind}{where}" for kind in IMPLEMENTATIONS for where in ("", "-in-scope")]


@contextmanager
def open_table(kind: str, folder: Path, moto_endpoint: Callable[[], str]) -> Iterator[Table]:
    """A fresh, empty table of one implementation (`moto_endpoint` is asked only for "moto")."""
    if kind == "memory":
        yield MemoryTable()
    elif kind == "sqlite":
        database = SqliteDatabase(folder / "terrace.db")
        try:
            yield SqliteTable(database)
        finally:
            database.close()
    else:
        made = clients(moto_endpoint())
        yield DynamoTable(made["dynamodb"], create_table_and_bucket(made).table_name)


@contextmanager
def open_held_table(kind: str, folder: Path, moto_endpoint: Callable[[], str]) -> Iterator[Table]:
    """A `HELD_TABLES` kind: `held-<implementation>` wraps a fresh table of it in `HeldReadsTable`, and
    `held-<implementation>-in-scope` keeps a `held_reads()` scope open until the table is closed."""
    implementation = kind.removeprefix("held-").removesuffix("-in-scope")
    with open_table(implementation, folder, moto_endpoint) as inner:
        if not kind.endswith("-in-scope"):
            yield HeldReadsTable(inner)
            return
        with held_reads():
            yield HeldReadsTable(inner)
