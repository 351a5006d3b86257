"""Fault-injecting wrappers around the table and blob store ports, for `LocalStack(wrap_ports=...)`.

A `FaultWindow` decides, from the test's seeded rng, what each port call meets while the window is open: nothing,
a delay, an error raised before the call reaches the store (the write never happened), or an error raised after it
(the write happened but its answer was lost, as a timeout after DynamoDB committed). The errors are those the real
adapter raises on such a fault: `sqlite3.OperationalError` / `OSError(EIO)` embedded, botocore's `ClientError`
(500 InternalError / 503 SlowDown) on the AWS adapters. Outside the window every call passes through untouched.

`FaultyBlobs` passes `isinstance(blobs, FsBlobs)` (the embedded app serves its own blob URLs only then) and also
intercepts the calls the blob URL server makes (`open_writer`, `path_of`), so uploads and downloads through URLs
meet the faults too.
"""

from __future__ import annotations

import errno
import random
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

WRITES = {"put", "delete", "transact", "batch_put", "batch_delete", "copy", "write_stream", "open_writer"}


@dataclass
class FaultWindow:
    rng: random.Random
    backend: str  # "embedded" or "moto": which errors the stores raise
    error_rate: float = 0.3
    delay_rate: float = 0.2
    max_delay_s: float = 0.3
    ports: frozenset[str] = frozenset({"table", "blobs"})
    open: bool = False
    seen: Counter[str] = field(default_factory=Counter)  # "table.put:error-before", ... while open
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> None:
        self.open = True

    def stop(self) -> None:
        self.open = False

    def strike(self, port: str, op: str, call: Callable[[], Any]) -> Any:
        if not self.open or port not in self.ports:
            return call()
        with self._lock:  # one rng, drawn in some order by the server's threads: seeded, not ordered
            roll, delay, after = self.rng.random(), self.rng.uniform(0, self.max_delay_s), self.rng.random() < 0.5
        if roll < self.error_rate:
            when = "after" if after and op in WRITES else "before"
            self.seen[f"{port}.{op}:error-{when}"] += 1
            if when == "after":
                call()
            raise self.error(port, op)
        if roll < self.error_rate + self.delay_rate:
            self.seen[f"{port}.{op}:delay"] += 1
            time.sleep(delay)
        return call()

    def error(self, port: str, op: str) -> Exception:
        if self.backend == "embedded":
            if port == "table":
                return sqlite3.OperationalError("disk I/O error")
            return OSError(errno.EIO, "Input/output error (injected)")
        from botocore.exceptions import ClientError

        code, status = ("InternalServerError", 500) if port == "table" else ("SlowDown", 503)
        body = {"Error": {"Code": code, "Message": "injected"}, "ResponseMetadata": {"HTTPStatusCode": status}}
        return ClientError(body, op)  # type: ignore[arg-type]


class FaultyTable:
    """The table port with faults; delegates everything else."""

    def __init__(self, inner: Any, window: FaultWindow) -> None:
        self.inner, self.window = inner, window

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def get(self, pk: str, sk: str) -> Any:
        return self.window.strike("table", "get", lambda: self.inner.get(pk, sk))

    def batch_get(self, keys: Sequence[tuple[str, str]]) -> Any:
        return self.window.strike("table", "batch_get", lambda: self.inner.batch_get(keys))

    def put(self, item: dict[str, Any], **kwargs: Any) -> None:
        self.window.strike("table", "put", lambda: self.inner.put(item, **kwargs))

    def delete(self, pk: str, sk: str, **kwargs: Any) -> None:
        self.window.strike("table", "delete", lambda: self.inner.delete(pk, sk, **kwargs))

    def query(self, pk: str, **kwargs: Any) -> Any:
        return self.window.strike("table", "query", lambda: self.inner.query(pk, **kwargs))

    def transact(self, ops: Any) -> None:
        self.window.strike("table", "transact", lambda: self.inner.transact(ops))

    def batch_put(self, items: Any) -> None:
        self.window.strike("table", "batch_put", lambda: self.inner.batch_put(items))

    def batch_delete(self, keys: Any) -> None:
        self.window.strike("table", "batch_delete", lambda: self.inner.batch_delete(keys))


class FaultyBlobs:
    """The blob store port with faults. `__class__` answers the wrapped store's class, as `unittest.mock` does for
    a spec, so the app's `isinstance(blobs, FsBlobs)` still holds."""

    def __init__(self, inner: Any, window: FaultWindow) -> None:
        self.inner, self.window = inner, window

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # noqa: D105
        return type(self.inner)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _strike(self, op: str, *args: Any, **kwargs: Any) -> Any:
        return self.window.strike("blobs", op, lambda: getattr(self.inner, op)(*args, **kwargs))

    def put(self, *args: Any, **kwargs: Any) -> Any:
        return self._strike("put", *args, **kwargs)

    def get(self, *args: Any, **kwargs: Any) -> Any:
        return self._strike("get", *args, **kwargs)

    def iter_chunks(self, *args: Any, **kwargs: Any) -> Any:
        return self._strike("iter_chunks", *args, **kwargs)

    def get_range(self, *args: Any, **kwargs: Any) -> Any:
        return self._strike("get_range", *args, **kwargs)

    def head(self, *args: Any, **kwargs: Any) -> Any:
        return self._strike("head", *args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        return self._strike("delete", *args, **kwargs)

    def copy(self, *args: Any, **kwargs: Any) -> Any:
        return self._strike("copy", *args, **kwargs)

    def write_stream(self, *args: Any, **kwargs: Any) -> Any:
        return self._strike("write_stream", *args, **kwargs)

    def open_writer(self, *args: Any, **kwargs: Any) -> Any:  # the embedded blob server's uploads
        return self._strike("open_writer", *args, **kwargs)

    def presign_put(self, *args: Any, **kwargs: Any) -> Any:
        return self.inner.presign_put(*args, **kwargs)

    def presign_get(self, *args: Any, **kwargs: Any) -> Any:
        return self.inner.presign_get(*args, **kwargs)


def wrapper(window: FaultWindow) -> Callable[[Any, Any], tuple[Any, Any]]:
    """`LocalStack(wrap_ports=wrapper(window))`."""
    return lambda table, blobs: (FaultyTable(table, window), FaultyBlobs(blobs, window))
