"""The implementations every port's contract runs against (parameter ids), and a table of each."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from aws import clients, create_table_and_bucket
from terrace.adapters.dynamo_table import DynamoTable
from terrace.adapters.memory_table import MemoryTable
from terrace.adapters.sqlite_table import SqliteDatabase, SqliteTable
from terrace.adapters.table import Table

IMPLEMENTATIONS = ["memory", "sqlite", "moto"]  # "sqlite" names the embedded server's adapter of each port


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
