"""Phase logs: one writer (the runner), many readers (CLI, UI).

Chunks live in DynamoDB while a phase runs and are archived to one S3 object when it ends. Readers
get the stream framed as STX + bytes (+ ETX once the phase is final), sliced exactly at
[offset, offset+limit). log-read URLs carry an HMAC signature and expiry in their path, because
clients send no Authorization there and replace the whole query string.

Sensitive values: the runner masks them before it sends a byte; this service masks the workspace's
sensitive variable values again when it archives a log and when it serves live chunks (defence in
depth: every reader, the API and the UI, reads through here). A live read stops short of a possible
split secret at the end of what has arrived, so what a reader saw never changes as the log grows.

A poll reads only the chunks written since the previous one (`log_cursors.py`); a finished phase's log is read from
its archive (one ranged GET), never from the table. Embedded, a log-read URL that has nothing new for a phase still
running holds the request up to `read_wait_s` (`TERRACE_LOG_READ_WAIT_S`), re-reading every `READ_POLL_S`, and
answers as soon as bytes (or the phase's end, ETX) arrive: the CLI's reader (go-tfe) otherwise sleeps 0.5-2 s
between empty answers. On AWS it is 0: the answer is what there is, and a Lambda is never held waiting.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime

from terrace.adapters.blobs import BlobStore
from terrace.domain.errors import BadRequest, NotFound
from terrace.domain.masking import Masker
from terrace.domain.runs import PhaseState, Run, run_id_of
from terrace.domain.url_signing import Purpose, UrlSigning
from terrace.services.runs.log_cursors import LogCursors
from terrace.services.runs.store import RunStore
from terrace.services.runs.store_logs import HEAD, TAIL, archive_key
from terrace.services.workspaces.variables import VariableService

STX, ETX = b"\x02", b"\x03"
MAX_CHUNK = 256 * 1024
MAX_READ = 1024 * 1024
MAX_OFFSET = 1 << 40  # no log is a TiB: a read past this is empty (and a log-read URL refuses it, 400)
READ_WAIT_S = 2.0  # the longest a log-read URL holds a read that has nothing new while its phase runs
READ_POLL_S = 0.1


def read_window(offset: str | None, limit: str | None) -> tuple[int, int]:
    """A log-read URL's `offset` and `limit` query parameters (go-tfe sends both), checked: BadRequest otherwise."""
    try:
        start, size = int(offset if offset is not None else "0"), int(limit if limit is not None else "65536")
    except ValueError as exc:
        raise BadRequest("offset and limit must be integers") from exc
    if not (0 <= start <= MAX_OFFSET and 0 <= size <= MAX_OFFSET):
        raise BadRequest(f"offset and limit must be integers from 0 to {MAX_OFFSET}")
    return start, size


def _phase_of(run: Run, phase_id: str) -> PhaseState:
    return run.plan if phase_id.startswith("plan-") else run.apply


def _epoch(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


class LogService:
    def __init__(
        self,
        blobs: BlobStore,
        signing_secret: str,
        store: RunStore,
        variables: VariableService,
        link_ttl_s: int,
        read_wait_s: float = READ_WAIT_S,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._blobs = blobs
        self._signing = UrlSigning(signing_secret)
        self._store = store
        self._variables = variables
        self._link_ttl_s = link_ttl_s
        self._read_wait_s, self._sleep = read_wait_s, sleep
        self._cursors = LogCursors(store.logs)  # a poll reads only the chunks written since the last one

    def _masker(self, run: Run) -> Masker:
        return Masker(self._variables.sensitive_values_of(run).values)

    # writing -----------------------------------------------------------------------------
    def append(self, phase_id: str, attempt: int, offset: int, data: bytes) -> None:
        """Idempotent: the same (attempt, offset) overwrites itself."""
        for start in range(0, len(data), MAX_CHUNK):
            piece = data[start : start + MAX_CHUNK]
            self._store.logs.put(phase_id, attempt, offset + start, piece)

    def note(self, phase_id: str, attempt: int, text: str) -> None:
        """A server-written line at the head of an attempt (sorts before the runner's bytes)."""
        self._store.logs.put(phase_id, attempt, HEAD, text.encode())

    def closing_note(self, phase_id: str, attempt: int, text: str) -> None:
        """A server-written line at the end of an attempt (sorts after the runner's bytes)."""
        self._store.logs.put(phase_id, attempt, TAIL, text.encode())

    def _raw_body(self, phase_id: str) -> bytes:
        """The chunks as the runner sent them, unmasked: only for the masking readers below."""
        return b"".join(self._store.logs.chunks(phase_id))

    def body(self, phase_id: str) -> bytes:
        """The live log so far, masked."""
        return self._masker(self._store.load(run_id_of(phase_id))).mask(self._raw_body(phase_id))

    def archive(self, phase_id: str) -> None:
        """Write the framed, masked log to S3. Idempotent: the chunks stay until `purge` (after the phase is final),
        and while they are there the archive is their masked copy (written again as it was); once they are gone,
        the archive written before them stands (only then is the bucket asked)."""
        if not self._store.logs.chunks(phase_id) and self._blobs.head(archive_key(phase_id)) is not None:
            return
        self._blobs.put(archive_key(phase_id), STX + self.body(phase_id) + ETX, content_type="text/plain")

    def purge(self, phase_id: str) -> None:
        self._store.logs.purge(phase_id)

    # reading -----------------------------------------------------------------------------
    def read(self, phase_id: str, offset: int, limit: int, *, final: bool, archived: bool) -> bytes:
        run = None if archived else self._store.load(run_id_of(phase_id))
        return self._read(run, phase_id, offset, limit, final=final)

    def _read(self, run: Run | None, phase_id: str, offset: int, limit: int, *, final: bool) -> bytes:
        """`run` None: the archive (masked when written); else the live chunks, masked now."""
        if not 0 <= offset <= MAX_OFFSET or limit <= 0:
            return b""  # nothing is there (a file offset past int64 would fail the read)
        limit = min(limit, MAX_READ)
        if run is None:
            return self._blobs.get_range(archive_key(phase_id), offset, offset + limit)
        stream = self._cursors.stream(phase_id, offset - len(STX), lambda: self._masker(run), final=final)
        if stream is None:
            return b""  # nothing past what the poller has: no variables read
        framed = STX + stream + (ETX if final else b"")
        return framed[offset : offset + limit]

    def tail(self, phase_id: str, archived: bool, max_bytes: int = 2000) -> str:
        if archived:
            data = self._blobs.get(archive_key(phase_id)).strip(STX + ETX)
        else:
            data = self.body(phase_id)
        return data[-max_bytes:].decode(errors="replace")

    # signed URLs -------------------------------------------------------------------------
    def signed_path(self, phase_id: str) -> str:
        expires = int(time.time()) + self._link_ttl_s
        return f"/api/v2/logs/{phase_id}/{expires}/{self._signing.sign(Purpose.LOG_READ, phase_id, expires)}"

    def read_signed(self, phase_id: str, expires: int, signature: str, offset: int, limit: int) -> bytes:
        """A log-read URL's bytes. It works until `expires`, and while its phase has not ended; once the
        phase ended, for at most `link_ttl_s` after that (a reader started during a long phase finishes)."""
        gone = NotFound("log not found or link expired")
        if not phase_id.startswith(("plan-", "apply-")) or not self._signing.verify(
            signature, Purpose.LOG_READ, phase_id, expires
        ):
            raise gone
        try:
            run = self._store.load(run_id_of(phase_id))
        except NotFound:
            raise gone from None
        phase = _phase_of(run, phase_id)
        if phase.id != phase_id:
            raise gone
        now = time.time()
        if now > expires:
            ended = self._ended_at(run, phase)
            if ended is not None and now > ended + self._link_ttl_s:
                raise gone
        deadline = time.monotonic() + self._read_wait_s
        while True:
            live = None if phase.log_archived else run
            data = self._read(live, phase_id, offset, min(limit, MAX_READ), final=phase.final)
            if data or limit <= 0 or phase.final or run.final or time.monotonic() >= deadline:
                return data
            self._sleep(READ_POLL_S)
            run = self._store.load(run.id)
            phase = _phase_of(run, phase_id)

    @staticmethod
    def _ended_at(run: Run, phase: PhaseState) -> float | None:
        """When the phase stopped writing its log; None while it may still write."""
        if not (phase.final or run.final):
            return None
        moments = [*phase.timestamps.values(), *run.status_timestamps.values()]
        if phase.finished_at:
            moments.append(phase.finished_at)
        return max((_epoch(m) for m in moments), default=0.0)
