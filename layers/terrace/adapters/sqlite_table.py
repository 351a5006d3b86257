"""SQLite implementation of the Table port: the embedded server's one database file (WAL mode).

Semantics are the in-memory table's (`memory_table.py`, the reference) and DynamoDB's: conditional puts and
deletes on `version`, `transact` all-or-nothing, `gsi1` ordered by (gsi1sk, pk, sk), the item-size guard
before anything is written. Items are JSON (bytes tagged) in one `items` table keyed (pk, sk) with the
gsi1 keys and `expires_at` as indexed columns. As on DynamoDB, an item past its `expires_at` stays readable
until the TTL sweep (`purge_expired`) deletes it: services check expiry themselves.

Thread-safe: a bounded pool of connections (`SqliteDatabase`, POOL_SIZE), each borrowed for one read or one
transaction (FastAPI runs plain `def` endpoints in a thread pool of its own size); writes run in `BEGIN IMMEDIATE`
transactions, so concurrent writers queue on SQLite's lock (busy timeout) rather than fail.
"""

from __future__ import annotations

import base64
import json
import sqlite3
import time
from collections.abc import Sequence
from typing import Any

from terrace.adapters.sqlite_table_pool import BUSY_TIMEOUT_MS, POOL_SIZE, SqliteDatabase, connect
from terrace.adapters.table import Check, ConditionFailed, Delete, Item, Put, WriteOp
from terrace.domain.limits import check_item

__all__ = ["BUSY_TIMEOUT_MS", "POOL_SIZE", "SqliteDatabase", "SqliteTable", "connect", "dumps", "loads"]

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
        after: str | None = None,
    ) -> list[Item]:
        pk_name, sk_name = _INDEX_KEYS[index] if index else ("pk", "sk")
        sql = f"SELECT body FROM items WHERE {pk_name} = ? AND {sk_name} IS NOT NULL"
        params: list[Any] = [pk]
        if prefix:
            sql += f" AND {sk_name} >= ? AND substr({sk_name}, 1, length(?)) = ?"
            params += [prefix, prefix, prefix]
        elif after is not None:
            sql += f" AND {sk_name} > ?"
            params.append(after)
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
