"""The embedded server's SQLite file and its bounded pool of connections (`SqliteDatabase`), shared by the table
(`sqlite_table.py`), the events queue and the lanes: WAL mode, full sync, a busy timeout, explicit transactions.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

BUSY_TIMEOUT_MS = 30_000
POOL_SIZE = 8  # connections of one process; each holds the file, its WAL and the shared-memory index open


def connect(path: Path | str) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), WAL, full sync, busy timeout."""
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")  # an acknowledged write survives a crash of the machine too
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


class SqliteDatabase:
    """One SQLite file shared by the table and the events queue. Connections are pooled and bounded: a thread
    borrows one for a read or a transaction and gives it back; when all `pool_size` are out it waits for one (up
    to the busy timeout, then `sqlite3.OperationalError`: a 503). So the open files stay flat however many worker
    threads the server's pool grows to (one connection per thread grew with them). A thread that already holds
    one and borrows again (nested) gets a connection of its own beyond the bound rather than wait on itself."""

    def __init__(self, path: Path | str, pool_size: int = POOL_SIZE) -> None:
        if pool_size < 1:
            raise ValueError("pool_size must be at least 1")
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self.path.exists():
            self.path.touch(mode=0o600)
        self.pool_size = pool_size
        self._idle: list[sqlite3.Connection] = []
        self._opened = 0  # connections that exist within the bound (idle or borrowed)
        self._available = threading.Condition(threading.Lock())
        self._held = threading.local()  # how many connections this thread holds (nested borrows)
        # SQLite has one writer at a time: this process's writers queue here (woken in turn) rather than in
        # SQLite's busy handler (which sleeps and retries, so a busy moment gives some writers long tails);
        # another process (the admin CLI, a backup) still meets the busy timeout
        self._writer = threading.Lock()
        self._closed = False

    def open_connections(self) -> int:
        """Connections within the bound, idle or borrowed (never more than `pool_size`)."""
        with self._available:
            return self._opened

    def _borrow(self) -> tuple[sqlite3.Connection | None, bool]:
        """An idle connection (or None: open one), and whether it counts within the bound."""
        nested = getattr(self._held, "depth", 0) > 0
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        with self._available:
            while True:
                if self._closed:
                    raise sqlite3.ProgrammingError("the database is closed")
                if self._idle:
                    return self._idle.pop(), True
                if self._opened < self.pool_size:
                    self._opened += 1
                    return None, True
                if nested:
                    return None, False
                left = deadline - time.monotonic()
                if left <= 0:
                    raise sqlite3.OperationalError("no database connection free (the pool is exhausted)")
                self._available.wait(left)

    def _give_back(self, conn: sqlite3.Connection, pooled: bool) -> None:
        with self._available:
            if pooled and not self._closed:
                self._idle.append(conn)
                self._available.notify()
                return
            if pooled:
                self._opened -= 1
        conn.close()

    @contextmanager
    def connection(self) -> Iterator[sqlite3.Connection]:
        conn, pooled = self._borrow()
        if conn is None:
            try:
                conn = connect(self.path)
            except BaseException:
                if pooled:
                    with self._available:
                        self._opened -= 1
                        self._available.notify()
                raise
        self._held.depth = getattr(self._held, "depth", 0) + 1
        try:
            yield conn
        finally:
            self._held.depth -= 1
            try:
                if conn.in_transaction:  # never hand on a connection in the middle of a transaction
                    conn.execute("ROLLBACK")
            finally:
                self._give_back(conn, pooled)

    def fill(self) -> None:
        """Open every connection of the pool now (the embedded server, at its start): its open files are then the
        same from the first request to the last, where a pool filled on demand grew with the first bursts (the
        soak's open files rose 20 -> 26 between its halves)."""
        while True:
            with self._available:
                if self._closed or self._opened >= self.pool_size:
                    return
                self._opened += 1
            try:
                conn = connect(self.path)
            except BaseException:
                with self._available:
                    self._opened -= 1
                    self._available.notify()
                raise
            self._give_back(conn, True)

    def migrate(self, schema: str) -> None:
        with self.connection() as conn:
            conn.executescript(schema)

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """An immediate (write-locked) transaction: committed when the block ends, rolled back on an error."""
        with self._writer, self.connection() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def backup(self, target: Path | str) -> None:
        """A consistent copy of the whole file while others read and write (SQLite's online backup)."""
        destination = sqlite3.connect(str(target))
        try:
            with self.connection() as conn:
                conn.backup(destination)
        finally:
            destination.close()

    def close(self) -> None:
        with self._available:
            self._closed = True
            idle, self._idle = self._idle, []
            self._opened -= len(idle)
            self._available.notify_all()
        for conn in idle:
            conn.close()
