"""Phase logs: one writer (the runner), many readers (CLI, UI).

Chunks live in DynamoDB while a phase runs and are archived to one S3 object when it ends. Readers
get the stream framed as STX + bytes (+ ETX once the phase is final), sliced exactly at
[offset, offset+limit). log-read URLs carry an HMAC signature and expiry in their path, because
clients send no Authorization there and replace the whole query string.
"""

from __future__ import annotations

import hashlib
import hmac
import time

from terrace.adapters.blobs import BlobStore
from terrace.adapters.table import Table
from terrace.domain.errors import NotFound

STX, ETX = b"\x02", b"\x03"
MAX_CHUNK = 256 * 1024


def archive_key(phase_id: str) -> str:
    return f"logs/{phase_id}.log"


class LogService:
    def __init__(self, table: Table, blobs: BlobStore, signing_secret: str) -> None:
        self._table = table
        self._blobs = blobs
        self._secret = signing_secret.encode() or b"unset"

    # writing -----------------------------------------------------------------------------
    def append(self, phase_id: str, attempt: int, offset: int, data: bytes) -> None:
        """Idempotent: the same (attempt, offset) overwrites itself."""
        for start in range(0, len(data), MAX_CHUNK):
            piece = data[start : start + MAX_CHUNK]
            self._table.put({"pk": f"{phase_id}#log", "sk": f"{attempt:03d}#{offset + start:012d}", "data": piece})

    def note(self, phase_id: str, attempt: int, text: str) -> None:
        """A server-written line at the head of an attempt (sorts before the runner's bytes)."""
        self._table.put({"pk": f"{phase_id}#log", "sk": f"{attempt:03d}#-", "data": text.encode()})

    def closing_note(self, phase_id: str, attempt: int, text: str) -> None:
        """A server-written line at the end of an attempt (sorts after the runner's bytes)."""
        self._table.put({"pk": f"{phase_id}#log", "sk": f"{attempt:03d}#~", "data": text.encode()})

    def body(self, phase_id: str) -> bytes:
        return b"".join(bytes(item["data"]) for item in self._table.query(f"{phase_id}#log"))

    def archive(self, phase_id: str) -> None:
        """Write the framed log to S3. Idempotent; chunks stay until `purge` (after the phase is final)."""
        if self._blobs.head(archive_key(phase_id)) is not None:
            return
        framed = STX + self.body(phase_id) + ETX
        self._blobs.put(archive_key(phase_id), framed, content_type="text/plain")

    def purge(self, phase_id: str) -> None:
        for item in self._table.query(f"{phase_id}#log"):
            self._table.delete(item["pk"], item["sk"])

    # reading -----------------------------------------------------------------------------
    def read(self, phase_id: str, offset: int, limit: int, *, final: bool, archived: bool) -> bytes:
        if archived:
            return self._blobs.get_range(archive_key(phase_id), offset, offset + limit)
        framed = STX + self.body(phase_id) + (ETX if final else b"")
        return framed[offset : offset + limit]

    def tail(self, phase_id: str, archived: bool, max_bytes: int = 2000) -> str:
        data = self._blobs.get(archive_key(phase_id)).strip(STX + ETX) if archived else self.body(phase_id)
        return data[-max_bytes:].decode(errors="replace")

    # signed URLs -------------------------------------------------------------------------
    def _signature(self, phase_id: str, expires: int) -> str:
        return hmac.new(self._secret, f"{phase_id}:{expires}".encode(), hashlib.sha256).hexdigest()

    def signed_path(self, phase_id: str, ttl_s: int) -> str:
        expires = int(time.time()) + ttl_s
        return f"/api/v2/logs/{phase_id}/{expires}/{self._signature(phase_id, expires)}"

    def verify(self, phase_id: str, expires: int, signature: str) -> None:
        valid = hmac.compare_digest(self._signature(phase_id, expires), signature)
        if not valid or expires < time.time():
            raise NotFound("log not found or link expired")
