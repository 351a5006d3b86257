"""SQLite implementation of the Table port: the embedded server's one database file (WAL mode).

Semantics are the in-memory table's (`memory_table.py`, the reference) and DynamoDB's: conditional puts and
deletes on `version`, `transact` all-or-nothing, `gsi1` ordered by (gsi1sk, pk, sk), the item-size guard
before anything is written. Items are JSON (bytes tagged) in one `items` table keyed (pk, sk) with the
gsi1 keys and `expires_at` as indexed columns. As on DynamoDB, an item past its `expires_at` stays readable
until the TTL sweep (`purge_expired`) deletes it: services check expiry themselves.

Thread-safe: one connection per thread (FastAPI runs plain `def` endpoints in a thread pool); writes run in
`BEGIN IMMEDIATE` transactions, so concurrent writers queue on SQLite's lock (busy timeout) rather than fail.
"""

from __future__ import annotations

import base64
import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from terrace.adapters.table import Check, ConditionFailed, Delete, Item, Put, WriteOp
from terrace.domain.limits import check_item

BUSY_TIMEOUT_MS = 30_000
_INDEX_KEYS = {"gsi1": ("gsi1pk", "gsi1sk")}
_BYTES_TAG = "__terrace_bytes__"
SCHEMA = """
CREATE TABLE IF NOT EXISTS items (
    pk TEXT NOT NULL,
    sk TEXT NOT NULL,
    gsi1pk TEXT,
    gsi1sk TEXT,
    expires_at INTEGER,
    body TEXT NOT NULL,
    PRIMARY KEY (pk, sk)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS items_gsi1 ON items (gsi1pk, gsi1sk, pk, sk) WHERE gsi1pk IS NOT NULL;
CREATE INDEX IF NOT EXISTS items_expiry ON items (expires_at) WHERE expires_at IS NOT NULL;
"""


def _encode(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return {_BYTES_TAG: base64.b64encode(value).decode()}
    raise TypeError(f"cannot store {type(value).__name__} in a table item")


def _decode(obj: dict[str, Any]) -> Any:
    if len(obj) == 1 and _BYTES_TAG in obj:
        return base64.b64decode(obj[_BYTES_TAG])
    return obj


def dumps(item: Item) -> str:
    return json.dumps(item, default=_encode, separators=(",", ":"), ensure_ascii=False)


def loads(body: str) -> Item:
    item: Item = json.loads(body, object_hook=_decode)
    return item


def _key_column(value: Any) -> str | None:
    return None if value is None else str(value)


def _expiry(item: Item) -> int | None:
    value = item.get("expires_at")
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def connect(path: Path | str) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), WAL, full sync, busy timeout."""
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")  # an acknowledged write survives a crash of the machine too
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


class SqliteDatabase:
    """One SQLite file shared by the table and the events queue. Connections are pooled: a thread borrows one
    for a read or a transaction and gives it back, so the pool grows to the peak concurrency and no further
    (thread-local connections would outlive the worker threads FastAPI's pool retires)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self.path.exists():
            self.path.touch(mode=0o600)
        self._idle: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        # SQLite has one writer at a time: this process's writers queue here (woken in turn) rather than in
        # SQLite's busy handler (which sleeps and retries, so a busy moment gives some writers long tails);
        # another process (the admin CLI, a backup) still meets the busy timeout
        self._writer = threading.Lock()
        self._closed = False

    @contextmanager
    def connection(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._closed:
                raise sqlite3.ProgrammingError("the database is closed")
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = connect(self.path)
        try:
            yield conn
        finally:
            if conn.in_transaction:  # never hand on a connection in the middle of a transaction
                conn.execute("ROLLBACK")
            with self._lock:
                if self._closed:
                    conn.close()
                else:
                    self._idle.append(conn)

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
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


class SqliteTable:
    def __init__(self, database: SqliteDatabase) -> None:
        self._db = database
        database.migrate(SCHEMA)

    def get(self, pk: str, sk: str) -> Item | None:
        with self._db.connection() as conn:
            row = conn.execute("SELECT body FROM items WHERE pk = ? AND sk = ?", (pk, sk)).fetchone()
        return loads(row[0]) if row else None

    def batch_get(self, keys: Sequence[tuple[str, str]]) -> list[Item]:
        found: list[Item] = []
        unique = list(dict.fromkeys(keys))
        with self._db.connection() as conn:
            for start in range(0, len(unique), 200):
                chunk = unique[start : start + 200]
                where = " OR ".join("(pk = ? AND sk = ?)" for _ in chunk)
                params = [part for key in chunk for part in key]
                rows = conn.execute(f"SELECT body FROM items WHERE {where}", params).fetchall()
                found.extend(loads(row[0]) for row in rows)
        return found

    def put(self, item: Item, *, if_absent: bool = False, if_version: int | None = None) -> None:
        self.transact([Put(item, if_absent=if_absent, if_version=if_version)])

    def delete(self, pk: str, sk: str, *, if_version: int | None = None) -> None:
        self.transact([Delete(pk, sk, if_version=if_version)])

    def batch_put(self, items: Sequence[Item]) -> None:
        for item in items:
            check_item(item)  # all refused before any is written, as the DynamoDB adapter does
        with self._db.write() as conn:
            for item in items:
                self._write(conn, item)

    def batch_delete(self, keys: Sequence[tuple[str, str]]) -> None:
        with self._db.write() as conn:
            conn.executemany("DELETE FROM items WHERE pk = ? AND sk = ?", list(keys))

    def query(
        self,
        pk: str,
        *,
        prefix: str | None = None,
        index: str | None = None,
        reverse: bool = False,
        limit: int | None = None,
    ) -> list[Item]:
        pk_name, sk_name = _INDEX_KEYS[index] if index else ("pk", "sk")
        sql = f"SELECT body FROM items WHERE {pk_name} = ? AND {sk_name} IS NOT NULL"
        params: list[Any] = [pk]
        if prefix:
            sql += f" AND {sk_name} >= ? AND substr({sk_name}, 1, length(?)) = ?"
            params += [prefix, prefix, prefix]
        direction = "DESC" if reverse else "ASC"
        sql += f" ORDER BY {sk_name} {direction}, pk {direction}, sk {direction}"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        with self._db.connection() as conn:
            rows = conn.execute(sql, params).fetchall()
        return [loads(row[0]) for row in rows]

    def transact(self, ops: Sequence[WriteOp]) -> None:
        for op in ops:
            if isinstance(op, Put):
                check_item(op.item)  # as DynamoDB would refuse it
        with self._db.write() as conn:
            for op in ops:
                key = (op.item["pk"], op.item["sk"]) if isinstance(op, Put) else (op.pk, op.sk)
                row = conn.execute("SELECT body FROM items WHERE pk = ? AND sk = ?", key).fetchone()
                current = loads(row[0]) if row else None
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
                    self._write(conn, op.item)
                elif isinstance(op, Delete):
                    conn.execute("DELETE FROM items WHERE pk = ? AND sk = ?", (op.pk, op.sk))

    def purge_expired(self, now: float | None = None, batch: int = 500) -> int:
        """The TTL sweep (DynamoDB's TTL deletion): delete items whose `expires_at` passed; returns how many."""
        cutoff = int(time.time() if now is None else now)
        with self._db.write() as conn:
            cursor = conn.execute(
                "DELETE FROM items WHERE (pk, sk) IN (SELECT pk, sk FROM items WHERE expires_at < ? LIMIT ?)",
                (cutoff, batch),
            )
            return cursor.rowcount

    @staticmethod
    def _write(conn: sqlite3.Connection, item: Item) -> None:
        conn.execute(
            "INSERT OR REPLACE INTO items (pk, sk, gsi1pk, gsi1sk, expires_at, body) VALUES (?, ?, ?, ?, ?, ?)",
            (
                item["pk"],
                item["sk"],
                _key_column(item.get("gsi1pk")),
                _key_column(item.get("gsi1sk")),
                _expiry(item),
                dumps(item),
            ),
        )
