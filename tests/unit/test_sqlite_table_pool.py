"""The embedded server's SQLite connections are a bounded pool: however many threads use the database, no more
than `pool_size` connections (each one the file, its WAL and its shared-memory index held open) exist. The soak
(`tests/proof/test_soak.py`) found the open files growing with the server's worker threads, one connection each."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from terrace.adapters.sqlite_table import SqliteDatabase, SqliteTable


def _open_files_on(path: Path) -> int:
    found = 0
    for fd in Path("/proc/self/fd").iterdir():
        try:
            found += os.readlink(fd).startswith(str(path))
        except OSError:
            continue
    return found


def test_many_threads_share_at_most_pool_size_connections(tmp_path: Path) -> None:
    database = SqliteDatabase(tmp_path / "terrace.db", pool_size=4)
    table = SqliteTable(database)
    threads = 24
    arrived = threading.Barrier(threads)

    def work(n: int) -> None:
        arrived.wait(timeout=30)  # every thread is alive at once, as a grown worker pool's are
        for k in range(20):
            table.put({"pk": f"p{n}", "sk": f"s{k}", "version": 1})
            assert table.get(f"p{n}", f"s{k}") is not None
        assert len(table.query(f"p{n}")) == 20

    try:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(work, range(threads)))
        assert database.open_connections() <= 4
        assert _open_files_on(tmp_path / "terrace.db") <= 4 * 3  # the file, -wal, -shm per connection
        assert len(table.query("p0")) == 20
    finally:
        database.close()
    assert database.open_connections() == 0


def test_a_filled_pool_opens_no_file_under_concurrent_use(tmp_path: Path) -> None:
    database = SqliteDatabase(tmp_path / "terrace.db", pool_size=4)
    table = SqliteTable(database)
    try:
        database.fill()
        assert database.open_connections() == 4
        opened = _open_files_on(tmp_path / "terrace.db")

        def work(n: int) -> None:
            for k in range(10):
                table.put({"pk": f"p{n}", "sk": f"s{k}", "version": 1})

        with ThreadPoolExecutor(4) as pool:
            list(pool.map(work, range(8)))
        assert database.open_connections() == 4
        assert _open_files_on(tmp_path / "terrace.db") == opened
    finally:
        database.close()
    assert database.open_connections() == 0


def test_a_borrower_waits_for_a_connection_given_back(tmp_path: Path) -> None:
    database = SqliteDatabase(tmp_path / "terrace.db", pool_size=1)
    holding, release = threading.Event(), threading.Event()
    got: list[int] = []

    def holder() -> None:
        with database.connection():
            holding.set()
            release.wait(timeout=30)

    def borrower() -> None:
        with database.connection() as conn:
            got.append(conn.execute("SELECT 1").fetchone()[0])

    first = threading.Thread(target=holder)
    first.start()
    assert holding.wait(timeout=30)
    second = threading.Thread(target=borrower)
    second.start()
    second.join(timeout=0.2)
    assert second.is_alive() and not got  # the only connection is out: it waits
    release.set()
    first.join(timeout=30)
    second.join(timeout=30)
    assert got == [1]
    assert database.open_connections() == 1
    database.close()


def test_a_nested_borrow_does_not_wait_on_itself(tmp_path: Path) -> None:
    database = SqliteDatabase(tmp_path / "terrace.db", pool_size=1)
    with database.connection() as outer, database.connection() as inner:
        assert outer is not inner
        assert inner.execute("SELECT 2").fetchone()[0] == 2
    assert database.open_connections() == 1  # the extra one was closed, not pooled
    database.close()


def test_a_closed_database_lends_nothing(tmp_path: Path) -> None:
    database = SqliteDatabase(tmp_path / "terrace.db", pool_size=2)
    with database.connection() as conn:
        conn.execute("SELECT 1")
    database.close()
    with pytest.raises(Exception, match="closed"), database.connection():
        pass
